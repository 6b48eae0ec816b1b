-- The two leaderboards behind mart_external_agreement, side by side: per external set x scope x
-- configuration, the mean of the primary metric on the synthetic questions of the set's filings and
-- on the set's own questions, each with its rank (1 = best, ties share the average rank).
-- rank_change = synthetic_rank - external_rank (negative: the synthetic set flatters the configuration).
select * from {{ source('eval', 'external_agreement_configs') }}
