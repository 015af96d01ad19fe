-- What the host knows of each conversation's context for its data-flow policy
-- (host/flow): the origins the person designated, labels of the content that
-- entered it, the files it created and the tabs it opened. A JSON document, written
-- after every tool call that changes it; it goes with its conversation.
CREATE TABLE conversation_flow (
    conversation_id TEXT PRIMARY KEY REFERENCES conversations(id) ON DELETE CASCADE,
    state           TEXT NOT NULL,
    updated_at      TEXT NOT NULL
) STRICT;
