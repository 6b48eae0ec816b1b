-- Singular test (warn): the evaluation engine's bootstrap leaderboard (eval.leaderboard, written by
-- the eval_statistics asset) and this mart must agree on every mean: same newest runs, same scoring
-- rules. A mismatch means the two drifted apart, or eval.leaderboard is older than the eval rows
-- (eval_statistics has not run since the last evaluation): its bootstrap bounds are then stale.
{{ config(severity='warn') }}
{% for m in retrieval_metrics() %}
select '{{ m.name }}' as metric, l.scope, l.config_name, l.{{ m.name }}_mean as mart_mean, b.mean as bootstrap_mean
from {{ ref('mart_retriever_leaderboard') }} l
join {{ source('eval', 'leaderboard') }} b
  on b.kind = 'retrieval' and b.metric = '{{ m.name }}'
 and {{ null_safe_join('b', 'l', ['scope', 'config_name', 'retriever', 'k', 'chunking']) }}
where (l.{{ m.name }}_mean is null) != (b.mean is null)
   or abs(l.{{ m.name }}_mean - b.mean) > 1e-9
{% if not loop.last %}union all{% endif %}
{% endfor %}
