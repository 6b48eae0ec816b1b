-- mart_chance_levels agrees with itself and with the leaderboard: only registry metrics with a chance
-- level, at most as many chance levels as questions, a level XOR the note saying why there is none, and
-- the same mean (and chance level) as the leaderboard's for that configuration. Returns offending rows.
select c.*
from {{ ref('mart_chance_levels') }} c
left join {{ ref('mart_retriever_leaderboard') }} l
  on {{ null_safe_join('l', 'c', ['scope', 'config_name', 'retriever', 'k', 'chunking']) }}
where c.metric not in ({% for m in chance_metrics() %}'{{ m }}'{% if not loop.last %}, {% endif %}{% endfor %})
   or c.n_with_chance > c.n_questions
   or (c.chance_level is null) = (c.chance_note is null)
   {% for m in chance_metrics() -%}
   or (c.metric = '{{ m }}' and (abs(c.mean - l.{{ m }}_mean) > 1e-9
                                 or c.chance_level is distinct from l.{{ m }}_chance))
   {% endfor %}
