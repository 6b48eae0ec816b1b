{#- Interval macros. Bootstrap resampling is awkward in SQL, so the marts use closed forms
    (documented in docs/ANALYSTS.md):
      * binary metrics (hit@k, all-evidence hit, figure match): Wilson score interval, which stays
        inside [0, 1] and behaves at p = 0 or 1 and small n, unlike the Wald interval;
      * graded metrics (MRR, nDCG, recall, precision, AP, faithfulness): normal approximation
        mean +/- z * sd / sqrt(n), clamped to [0, 1]; NULL when n < 2 (no variance estimate).
    z comes from var('ci_z') (1.96: two-sided 95%). -#}

{% macro wilson_low(p, n) -%}
    case when {{ n }} > 0 then greatest(0.0,
        ({{ p }} + {{ var('ci_z') }}^2 / (2.0 * {{ n }})
         - {{ var('ci_z') }} * sqrt(greatest(0.0, {{ p }} * (1 - {{ p }}) / {{ n }} + {{ var('ci_z') }}^2 / (4.0 * {{ n }}^2))))
        / (1 + {{ var('ci_z') }}^2 / {{ n }})) end
{%- endmacro %}

{% macro wilson_high(p, n) -%}
    case when {{ n }} > 0 then least(1.0,
        ({{ p }} + {{ var('ci_z') }}^2 / (2.0 * {{ n }})
         + {{ var('ci_z') }} * sqrt(greatest(0.0, {{ p }} * (1 - {{ p }}) / {{ n }} + {{ var('ci_z') }}^2 / (4.0 * {{ n }}^2))))
        / (1 + {{ var('ci_z') }}^2 / {{ n }})) end
{%- endmacro %}

{% macro normal_low(mean, sd, n, lo=0.0) -%}
    case when {{ n }} >= 2 then greatest({{ lo }}, {{ mean }} - {{ var('ci_z') }} * coalesce({{ sd }}, 0) / sqrt({{ n }})) end
{%- endmacro %}

{% macro normal_high(mean, sd, n, hi=1.0) -%}
    case when {{ n }} >= 2 then least({{ hi }}, {{ mean }} + {{ var('ci_z') }} * coalesce({{ sd }}, 0) / sqrt({{ n }})) end
{%- endmacro %}

{#- mean, ci_low, ci_high of one metric column, named <alias>_mean / _ci_low / _ci_high.
    `binary` picks Wilson; otherwise the normal approximation. n defaults to the rows that have a
    value (NULL = not applicable / no relevant evidence). Use inside a GROUP BY select. -#}
{% macro metric_with_ci(col, alias=none, binary=false, n=none) -%}
    {%- set a = alias or col -%}
    {%- set n = n or ('count(' ~ col ~ ')') -%}
    avg({{ col }}) as {{ a }}_mean,
    {% if binary -%}
    {{ wilson_low('avg(' ~ col ~ ')', n) }} as {{ a }}_ci_low,
    {{ wilson_high('avg(' ~ col ~ ')', n) }} as {{ a }}_ci_high
    {%- else -%}
    {{ normal_low('avg(' ~ col ~ ')', 'stddev_samp(' ~ col ~ ')', n) }} as {{ a }}_ci_low,
    {{ normal_high('avg(' ~ col ~ ')', 'stddev_samp(' ~ col ~ ')', n) }} as {{ a }}_ci_high
    {%- endif %}
{%- endmacro %}
