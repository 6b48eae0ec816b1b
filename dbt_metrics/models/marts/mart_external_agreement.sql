-- External agreement (written by the eval_statistics asset, core/evaluation/agreement.py): per
-- external QA set x scope, Kendall tau-b and Spearman rho between the synthetic and the external
-- leaderboard over the configurations both ran (primary metric `metric` at `k`, by default
-- all_evidence_hit@5), seeded bootstrap intervals over questions, and the configuration pairs whose
-- order flips. A correlation that cannot be computed is NULL with the reason in `note`.
select
    external_set,
    source,
    scope,
    k,
    metric,
    n_filings,
    filing_ids,
    n_configs,
    n_external_questions,
    n_synthetic_questions,
    kendall_tau_b,
    kendall_ci_low,
    kendall_ci_high,
    spearman_rho,
    spearman_ci_low,
    spearman_ci_high,
    case
        when kendall_tau_b is null then 'not computable'
        when kendall_ci_low > 0 then 'agree'
        when kendall_ci_high < 0 then 'disagree'
        else 'not distinguishable from no agreement'
    end as verdict,
    n_pairs,
    n_flipped_pairs,
    flipped_pairs,
    best_synthetic,
    best_external,
    best_synthetic is distinct from best_external as best_differs,
    n_boot,
    n_boot_valid,
    confidence,
    seed,
    note,
    built_at
from {{ source('eval', 'external_agreement') }}
