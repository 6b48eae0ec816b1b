-- Singular test: the bootstrap and comparison columns of the leaderboard are coherent: bootstrap
-- intervals not inverted, the best configuration has difference 0 and is not "distinguishable" from
-- itself, and distinguishable_from_best is exactly "the paired CI excludes 0".
select *
from {{ ref('mart_retriever_leaderboard') }}
where {% for m in retrieval_metrics() -%}
      {{ m.name }}_boot_ci_low > {{ m.name }}_boot_ci_high + 1e-9 or
      {% endfor -%}
      (is_best and (distinguishable_from_best or abs(delta_vs_best) > 1e-9 or best_config_name != config_name))
   or (delta_vs_best_ci_low is not null
       and distinguishable_from_best != (delta_vs_best_ci_low > 0 or delta_vs_best_ci_high < 0))
   or delta_vs_best_ci_low > delta_vs_best + 1e-9 or delta_vs_best_ci_high < delta_vs_best - 1e-9
