{#- The grain test (dbt_utils.unique_combination_of_columns without dbt_utils): rows sharing the
    same values of `combination_of_columns`. NULLs group together, i.e. count as equal. -#}
{% test unique_combination(model, combination_of_columns) %}
select {{ combination_of_columns | join(', ') }}, count(*) as n_rows
from {{ model }}
group by {{ combination_of_columns | join(', ') }}
having count(*) > 1
{% endtest %}
