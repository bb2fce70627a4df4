-- rlstream registry, version 3: what a promotion was (a promotion or a rollback), where it
-- was deployed, and whether its deploy + DeploymentEvent went out (the outbox marker).
-- A promotion committed but not yet announced (crash between commit and publish) is
-- found by `announced_at IS NULL` and announced again with the same event id.

ALTER TABLE promotions
    ADD COLUMN kind text NOT NULL DEFAULT 'promote' CHECK (kind IN ('promote', 'rollback')),
    ADD COLUMN target text NOT NULL DEFAULT 'none',
    ADD COLUMN reason text,
    ADD COLUMN announced_at timestamptz;
CREATE INDEX promotions_unannounced ON promotions (created_at) WHERE announced_at IS NULL;
CREATE INDEX promotions_agent ON promotions (agent, created_at);
CREATE INDEX evaluations_candidate ON evaluations (candidate_model);
