-- Chunk counts per filing and type: the marts need the corpus size, not the text.
select
    filing_id,
    chunk_type,
    count(*) as n_chunks,
    count(*) filter (where is_leaf) as n_leaf_chunks,
    sum(length(text)) as n_chars
from {{ source('core', 'chunks') }}
group by filing_id, chunk_type
