-- Held-out task keys: evaluation-only prompts that no training dataset may contain.
-- The curator records a key here (per agent and reward spec) before it releases the pool
-- the key was seen in; the triggers make the rule hold for every writer: a held-out key's
-- rollouts can never be released, and a key already released can never be held out.

CREATE TABLE heldout_keys (
    agent        text NOT NULL,
    reward_spec  text NOT NULL,
    task_key     text NOT NULL,
    share        double precision NOT NULL CHECK (share > 0 AND share < 1),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent, reward_spec, task_key)
);

CREATE INDEX rollouts_released_key ON rollouts (agent, reward_spec, task_key)
    WHERE released_in IS NOT NULL;

CREATE FUNCTION rollouts_refuse_heldout() RETURNS trigger AS $$
BEGIN
    IF NEW.released_in IS NOT NULL AND EXISTS (
        SELECT 1 FROM heldout_keys h
        WHERE h.agent = NEW.agent AND h.reward_spec = NEW.reward_spec
          AND h.task_key = NEW.task_key
    ) THEN
        RAISE EXCEPTION 'rollout % has held-out task key %; it cannot be released in %',
            NEW.rollout_id, NEW.task_key, NEW.released_in
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER rollouts_refuse_heldout BEFORE INSERT OR UPDATE OF released_in ON rollouts
    FOR EACH ROW EXECUTE FUNCTION rollouts_refuse_heldout();

CREATE FUNCTION heldout_keys_unreleased() RETURNS trigger AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM rollouts r
        WHERE r.agent = NEW.agent AND r.reward_spec = NEW.reward_spec
          AND r.task_key = NEW.task_key AND r.released_in IS NOT NULL
    ) THEN
        RAISE EXCEPTION 'task key % was already released for training; it cannot be held out',
            NEW.task_key
            USING ERRCODE = 'check_violation';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER heldout_keys_unreleased BEFORE INSERT OR UPDATE ON heldout_keys
    FOR EACH ROW EXECUTE FUNCTION heldout_keys_unreleased();
