-- Held-out task keys per agent, not per (agent, reward spec): a held-out task must never
-- train any model of its agent, whatever the reward version. Before this, a reward version
-- bump re-drew the split: about a share of the keys trained under v1 were held out under
-- v2, and the evaluator's (per-agent) leak check refused every v2 run.
--
-- A key held out under one spec but already released under another has trained a model of
-- the agent: it can no longer be held out, so its row goes. Of duplicate rows (one key held
-- out under several specs) the first recorded stays; reward_spec then says which spec the
-- key was first held out under.

DELETE FROM heldout_keys h
WHERE EXISTS (
    SELECT 1 FROM rollouts r
    WHERE r.agent = h.agent AND r.task_key = h.task_key AND r.released_in IS NOT NULL
);

DELETE FROM heldout_keys a
USING heldout_keys b
WHERE a.agent = b.agent AND a.task_key = b.task_key
  AND (a.created_at, a.reward_spec) > (b.created_at, b.reward_spec);

ALTER TABLE heldout_keys DROP CONSTRAINT heldout_keys_pkey;
ALTER TABLE heldout_keys ADD PRIMARY KEY (agent, task_key);

CREATE INDEX rollouts_released_agent_key ON rollouts (agent, task_key)
    WHERE released_in IS NOT NULL;

CREATE OR REPLACE FUNCTION rollouts_refuse_heldout() RETURNS trigger AS $$
BEGIN
    IF NEW.released_in IS NOT NULL AND EXISTS (
        SELECT 1 FROM heldout_keys h
        WHERE h.agent = NEW.agent AND h.task_key = NEW.task_key
    ) THEN
        RAISE EXCEPTION 'rollout % has held-out task key %; it cannot be released in %',
            NEW.rollout_id, NEW.task_key, NEW.released_in
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION heldout_keys_unreleased() RETURNS trigger AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM rollouts r
        WHERE r.agent = NEW.agent AND r.task_key = NEW.task_key AND r.released_in IS NOT NULL
    ) THEN
        RAISE EXCEPTION 'task key % was already released for training; it cannot be held out',
            NEW.task_key
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
