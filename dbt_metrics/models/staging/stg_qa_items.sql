-- Phrasing leakage and the external set come from the item's metadata JSON (core/qa/leakage.py,
-- core/qa/importers.py); NULL for items written before they existed or without evidence.
with src as (
    select *, metadata is not null and json_valid(metadata) as _has_meta
    from {{ source('qa', 'items') }}
)
select
    qa_id,
    filing_id,
    question,
    reference_answer,
    question_type,
    difficulty,
    generator,
    status as qa_status,
    source as qa_source,
    case when _has_meta then json_extract_string(metadata, '$.external_set') end as external_set,
    -- the set a question belongs to: its external set's name, else the import format it came in
    -- (core/qa/importers.IMPORT_FORMATS; items imported before sets were named), else 'synthetic'
    coalesce(case when _has_meta then json_extract_string(metadata, '$.external_set') end,
             case when source in ('financebench', 'jsonl', 'csv') then source end,
             'synthetic') as question_set,
    case when _has_meta then try_cast(json_extract_string(metadata, '$.leakage.score') as double) end
        as leakage_score,
    case when _has_meta then try_cast(json_extract_string(metadata, '$.leakage.evidence_share') as double) end
        as leakage_evidence_share,
    case when _has_meta then try_cast(json_extract_string(metadata, '$.leakage.lexicon_share') as double) end
        as leakage_lexicon_share,
    case when _has_meta then json_extract_string(metadata, '$.leakage.band') end as leakage_band
from src
