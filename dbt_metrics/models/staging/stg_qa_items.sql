select
    qa_id,
    filing_id,
    question,
    reference_answer,
    question_type,
    difficulty,
    generator,
    status as qa_status,
    source as qa_source
from {{ source('qa', 'items') }}
