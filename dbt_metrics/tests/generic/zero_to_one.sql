{#- Rows where a score/proportion column falls outside [0, 1] (NULL passes: use not_null for that). -#}
{% test zero_to_one(model, column_name) %}
select {{ column_name }} as bad_value
from {{ model }}
where {{ column_name }} < 0 or {{ column_name }} > 1
{% endtest %}
