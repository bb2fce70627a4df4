-- rlstream erasure (issue 20 item 1): the record of each erasure, the tombstones of what it
-- removed, and the indexes that let one user's rows be found without scanning a table.
--
-- erasures: one row per `rlstream erase`: which selector kind (never its value), counts,
-- what it touched (datasets, runs, models) and the policy it applied.
-- erased_ids: sha256 digests of the erased conversation and rollout ids ('conversation:'
-- or 'rollout:' || id): counts and ids only, never content. The triggers below refuse to
-- store an erased conversation again (a replay from a topic within its retention).
-- erasure_impacts: (kind, id) of every dataset, run and model built from erased data, so
-- `rlstream lineage` can flag them.

CREATE TABLE erasures (
    erasure_id   text PRIMARY KEY,
    selector     text NOT NULL
        CHECK (selector IN ('conversation', 'user_key', 'user_value', 'agent')),
    field        text,
    status       text NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'done', 'partial')),
    counts       jsonb NOT NULL DEFAULT '{}',
    affected     jsonb NOT NULL DEFAULT '{}',
    policy       jsonb NOT NULL DEFAULT '{}',
    pending      jsonb NOT NULL DEFAULT '[]',
    created_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz
);

CREATE TABLE erased_ids (
    digest      text PRIMARY KEY,
    kind        text NOT NULL CHECK (kind IN ('conversation', 'rollout')),
    erasure_id  text NOT NULL REFERENCES erasures (erasure_id),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX erased_ids_erasure ON erased_ids (erasure_id);

CREATE TABLE erasure_impacts (
    erasure_id  text NOT NULL REFERENCES erasures (erasure_id),
    kind        text NOT NULL CHECK (kind IN ('dataset', 'run', 'model')),
    id          text NOT NULL,
    detail      jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (erasure_id, kind, id)
);
CREATE INDEX erasure_impacts_target ON erasure_impacts (kind, id);

-- A release rewritten without erased rows is a new revision of the same dataset id; a
-- revoked one may no longer be trained on.
ALTER TABLE datasets
    ADD COLUMN revision integer NOT NULL DEFAULT 1,
    ADD COLUMN revoked_by text;

-- Finding a user: a subject field in the transcript's metadata (containment, any field),
-- the same in the raw deltas of a turn buffer, and a task key's remaining rollouts.
CREATE INDEX transcripts_metadata ON transcripts USING gin ((body -> 'metadata') jsonb_path_ops);
CREATE INDEX turn_buffers_metadata ON turn_buffers
    USING gin (jsonb_path_query_array(turns, '$[*].delta.metadata') jsonb_path_ops);
CREATE INDEX rollouts_agent_key ON rollouts (agent, task_key);

CREATE FUNCTION erased_digest(kind text, id text) RETURNS text AS $$
    SELECT encode(sha256(convert_to(kind || ':' || id, 'UTF8')), 'hex')
$$ LANGUAGE sql IMMUTABLE STRICT;

-- An erased conversation is never stored again, by any writer: its transcript and its
-- rollouts are skipped (not an error, so a redelivered batch still commits the rest).
CREATE FUNCTION refuse_erased_conversation() RETURNS trigger AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM erased_ids
        WHERE digest = erased_digest('conversation', NEW.conversation_id)
    ) THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER transcripts_refuse_erased BEFORE INSERT ON transcripts
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_conversation();
CREATE TRIGGER rollouts_refuse_erased BEFORE INSERT ON rollouts
    FOR EACH ROW EXECUTE FUNCTION refuse_erased_conversation();
