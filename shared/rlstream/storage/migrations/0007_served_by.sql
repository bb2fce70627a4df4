-- The flywheel's edge (issue 21): a conversation -> the registered model that produced it.
-- `rlstream serve` logs the serving model's id as the transcript's `model`; when that id is
-- a model in the registry, the conversation was derived from that model, so lineage walks
-- from a model to the conversations it served (up) and from a model trained on served
-- conversations back to the model that served them (down). Derived from the rows, like the
-- other implied edges, so an erased transcript takes its edge with it.

CREATE INDEX transcripts_model ON transcripts ((body->>'model'));

CREATE OR REPLACE VIEW lineage_all AS
    SELECT from_kind, from_id, to_kind, to_id FROM lineage_edges
    UNION ALL
    SELECT 'dataset', released_in, 'rollout', rollout_id FROM rollouts
        WHERE released_in IS NOT NULL
    UNION ALL
    SELECT 'rollout', rollout_id, 'conversation', conversation_id FROM rollouts
    UNION ALL
    SELECT 'conversation', t.conversation_id, 'model', m.model_id
        FROM transcripts t JOIN models m ON m.model_id = t.body->>'model';
