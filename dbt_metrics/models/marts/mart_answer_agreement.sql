-- Agreement with people (eval.answer_agreement, core/evaluation/human_agreement.py): per labelled answer
-- set x split ('all', dev, heldout) x answer kinds ('all', 'figure+choice', each kind), how often the
-- answer scorer decides (coverage) and, where it decides, how often it agrees with the person's label
-- (a person accepts only Correct), Cohen's kappa, false accepts and rejects, and the label x decision
-- confusion. The same figures as `finrag score agreement` (test_answer_agreement_mart.py checks it);
-- kappa is NULL when undefined (nothing decided, or one decision throughout on both sides).
with verdicts as (
    select * from {{ source('eval', 'answer_agreement') }}
),

by_split as (
    select *, 'all' as split_group from verdicts
    union all
    select *, split as split_group from verdicts where split is not null
),

by_kind as (
    select *, 'all' as kind_group from by_split
    union all
    select *, 'figure+choice' as kind_group from by_split where kind in ('figure', 'choice')
    union all
    select *, kind as kind_group from by_split
),

counts as (
    select
        set_name,
        split_group as split,
        kind_group as kinds,
        count(*) as n_answers,
        count(*) filter (where scorer_decision in ('accept', 'reject')) as n_decided,
        count(*) filter (where scorer_decision = 'accept' and human_decision = 'accept') as n_both_accept,
        count(*) filter (where scorer_decision = 'reject' and human_decision = 'reject') as n_both_reject,
        count(*) filter (where scorer_decision = 'accept' and human_decision = 'reject') as false_accepts,
        count(*) filter (where scorer_decision = 'reject' and human_decision = 'accept') as false_rejects,
        count(*) filter (where label = 'Correct') as n_label_correct,
        count(*) filter (where label = 'Incorrect') as n_label_incorrect,
        count(*) filter (where label = 'Refusal') as n_label_refusal,
        count(*) filter (where label = 'Correct' and scorer_decision = 'undecided') as n_correct_undecided,
        count(*) filter (where label <> 'Correct' and scorer_decision = 'undecided') as n_not_correct_undecided,
        count(distinct system) as n_systems,
        string_agg(distinct judge_name, ', ') as judge_name,
        count(*) filter (where judge_decision in ('accept', 'reject')) as judge_n_decided,
        count(*) filter (where judge_decision in ('accept', 'reject') and judge_decision = human_decision)
            as judge_n_agree_people,
        count(*) filter (where judge_decision in ('accept', 'reject') and scorer_decision in ('accept', 'reject'))
            as judge_scorer_n_both,
        count(*) filter (where judge_decision in ('accept', 'reject') and judge_decision = scorer_decision)
            as judge_scorer_n_agree,
        sum(coalesce(judge_cost_usd, 0)) as judge_cost_usd,
        max(scored_at) as scored_at
    from by_kind
    group by 1, 2, 3
),

shares as (
    select
        *,
        n_both_accept + n_both_reject as n_agree,
        case when n_decided > 0 then (n_both_accept + false_rejects)::double / n_decided end as p_people_accept,
        case when n_decided > 0 then (n_both_accept + false_accepts)::double / n_decided end as p_scorer_accept
    from counts
)

select
    set_name,
    split,
    kinds,
    n_answers,
    n_decided,
    n_decided::double / n_answers as coverage,
    n_agree,
    case when n_decided > 0 then n_agree::double / n_decided end as agreement,
    case
        when n_decided = 0 then null
        when p_people_accept * p_scorer_accept + (1 - p_people_accept) * (1 - p_scorer_accept) >= 1 then null
        else (n_agree::double / n_decided
              - (p_people_accept * p_scorer_accept + (1 - p_people_accept) * (1 - p_scorer_accept)))
             / (1 - (p_people_accept * p_scorer_accept + (1 - p_people_accept) * (1 - p_scorer_accept)))
    end as kappa,
    false_accepts,
    false_rejects,
    n_both_accept,
    n_both_reject,
    n_label_correct,
    n_label_incorrect,
    n_label_refusal,
    n_correct_undecided,
    n_not_correct_undecided,
    n_systems,
    judge_name,
    judge_n_decided,
    case when judge_n_decided > 0 then judge_n_agree_people::double / judge_n_decided end as judge_agreement,
    judge_scorer_n_both,
    case when judge_scorer_n_both > 0 then judge_scorer_n_agree::double / judge_scorer_n_both end
        as judge_scorer_agreement,
    judge_cost_usd,
    scored_at
from shares
