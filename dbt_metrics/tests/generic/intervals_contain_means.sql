{#- Model-level test: for every `<m>_mean` column with `<m>_ci_low` / `<m>_ci_high` siblings,
    rows where the interval is inverted, leaves [0, 1] or does not contain the mean. Discovers the
    metric columns itself, so a new metric is covered without editing YAML. -#}
{% test intervals_contain_means(model, tolerance=1e-9) %}
{%- set names = adapter.get_columns_in_relation(model) | map(attribute='name') | map('lower') | list -%}
{%- set metrics = [] -%}
{%- for n in names if n.endswith('_mean') -%}
    {%- set base = n[:-5] -%}
    {%- if (base ~ '_ci_low') in names and (base ~ '_ci_high') in names -%}{%- do metrics.append(base) -%}{%- endif -%}
{%- endfor -%}
{%- if metrics | length == 0 %}
select 1 as no_interval_columns where false
{%- else -%}
{%- for m in metrics %}
select '{{ m }}' as metric, {{ m }}_mean as mean, {{ m }}_ci_low as ci_low, {{ m }}_ci_high as ci_high
from {{ model }}
where {{ m }}_ci_low > {{ m }}_ci_high + {{ tolerance }}
   or {{ m }}_ci_low < -{{ tolerance }} or {{ m }}_ci_high > 1 + {{ tolerance }}
   or {{ m }}_mean < {{ m }}_ci_low - {{ tolerance }} or {{ m }}_mean > {{ m }}_ci_high + {{ tolerance }}
{% if not loop.last %}union all{% endif %}
{%- endfor %}
{%- endif %}
{% endtest %}
