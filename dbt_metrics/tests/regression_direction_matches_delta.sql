-- Singular test: a flagged regression has a negative delta and a flagged improvement a positive one.
select *
from {{ ref('mart_regressions') }}
where (direction = 'regression' and delta >= 0)
   or (direction = 'improvement' and delta <= 0)
   or (outside_interval and direction not in ('regression', 'improvement'))
