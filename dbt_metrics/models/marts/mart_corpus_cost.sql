-- What the corpus scope costs against the filing scope, per configuration x question set: every key
-- retrieval metric's mean in each scope over the SAME questions (answered in both scopes, newest run
-- per filing) and the cost = corpus mean - filing mean (negative: the other filings crowd the
-- question's evidence out of the top k). n_paired is the number of questions behind both means.
with latest as (
    select * from {{ ref('int_retrieval_latest_by_question_set') }}
    where not is_no_relevant
),
paired as (
    select c.config_name, c.retriever, c.k, c.chunking, c.question_set,
           {% for m in key_retrieval_metrics() -%}
           c.{{ m.name }} as {{ m.name }}_corpus, f.{{ m.name }} as {{ m.name }}_filing,
           {% endfor -%}
           c.qa_id
    from latest c
    join latest f
      on f.scope = 'filing' and c.scope = 'corpus'
     and f.qa_id = c.qa_id and f.filing_id = c.filing_id
     and {{ null_safe_join('f', 'c', ['config_name', 'retriever', 'k', 'chunking']) }}
)
select
    config_name, retriever, k, chunking, question_set,
    count(*) as n_paired,
    {% for m in key_retrieval_metrics() -%}
    avg({{ m.name }}_filing) as {{ m.name }}_filing,
    avg({{ m.name }}_corpus) as {{ m.name }}_corpus,
    avg({{ m.name }}_corpus) - avg({{ m.name }}_filing) as {{ m.name }}_cost{% if not loop.last %},{% endif %}
    {% endfor %}
from paired
group by config_name, retriever, k, chunking, question_set
