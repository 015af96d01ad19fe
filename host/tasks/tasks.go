// Package tasks offers the agent's task-list tools (create_task, update_task,
// list_tasks): a list per conversation that the model keeps to track its own progress
// through a long job. Unlike the seed's in-memory list, it is stored in the database,
// so a host restart in the middle of the job loses none of it.
package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

// DefaultConversation holds the tasks of calls made outside any conversation
// (`ferry call`, tests), so that they still have one list to share.
const DefaultConversation = "default"

// Store is what the tools need from the database; *storage.DB implements it.
type Store interface {
	CreateTask(ctx context.Context, conversationID, subject, description string) (storage.Task, error)
	UpdateTask(ctx context.Context, conversationID string, id int64, u storage.TaskUpdate) (storage.Task, error)
	ListTasks(ctx context.Context, conversationID string) ([]storage.Task, error)
}

// Deps is what the task tools need from the host.
type Deps struct {
	Store Store
	// OnChange, when set, receives a conversation's whole list after every change
	// that committed, so the side panel can show it live. It is called on the tool's
	// own goroutine before the result returns: it must not block.
	OnChange func(conversationID string, tasks []Task)
}

// Task is a task as the model and the UI see it.
type Task struct {
	ID          string `json:"id"`
	Subject     string `json:"subject"`
	Description string `json:"description,omitempty"`
	Status      string `json:"status"`
	UpdatedAt   string `json:"updated_at,omitempty"`
}

// ListResult is list_tasks' result.
type ListResult struct {
	Tasks []Task `json:"tasks"`
	// Summary counts the tasks by status, so the model sees at a glance what is left.
	Summary string `json:"summary"`
}

func view(t storage.Task) Task {
	return Task{ID: strconv.FormatInt(t.ID, 10), Subject: t.Subject, Description: t.Description, Status: t.Status,
		UpdatedAt: t.UpdatedAt.UTC().Format("2006-01-02T15:04:05Z")}
}

// Tools returns the task tools.
func Tools(deps Deps) []tools.Tool {
	return []tools.Tool{{
		Name:        "create_task",
		Description: "Add a pending task to the conversation's task list, to track a job of several steps.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "subject": {"type": "string", "minLength": 1},
    "description": {"type": "string", "description": "what done looks like"}
  },
  "required": ["subject"],
  "additionalProperties": false
}`),
		Source: tools.SourceBuiltin,
		// The list lives in the host; its text is the model's own, which no page and
		// no person reads from there.
		Class: tools.ClassLocal, Effects: local, Provenance: nothing,
		Kind: tools.KindWrite,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			var args struct {
				Subject     string `json:"subject"`
				Description string `json:"description"`
			}
			if err := call.Decode(&args); err != nil {
				return nil, err
			}
			conv := conversation(call)
			t, err := deps.Store.CreateTask(ctx, conv, args.Subject, args.Description)
			if err != nil {
				return nil, failure(err)
			}
			deps.changed(ctx, conv)
			return view(t), nil
		},
	}, {
		Name:        "update_task",
		Description: "Change a task's status, subject or description (one at least).",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "task_id": {"type": ["string", "integer"]},
    "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
    "subject": {"type": "string", "minLength": 1},
    "description": {"type": "string"}
  },
  "required": ["task_id"],
  "additionalProperties": false
}`),
		Source: tools.SourceBuiltin,
		// The list lives in the host; its text is the model's own, which no page and
		// no person reads from there.
		Class: tools.ClassLocal, Effects: local, Provenance: nothing,
		Kind: tools.KindWrite,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			var args struct {
				TaskID      json.RawMessage `json:"task_id"`
				Status      *string         `json:"status"`
				Subject     *string         `json:"subject"`
				Description *string         `json:"description"`
			}
			if err := call.Decode(&args); err != nil {
				return nil, err
			}
			id, err := taskID(args.TaskID)
			if err != nil {
				return nil, err
			}
			if args.Status == nil && args.Subject == nil && args.Description == nil {
				return nil, tools.Failf(tools.CodeInvalidParams, "nothing to change: give status, subject or description")
			}
			conv := conversation(call)
			t, err := deps.Store.UpdateTask(ctx, conv, id, storage.TaskUpdate{Status: args.Status, Subject: args.Subject, Description: args.Description})
			if err != nil {
				return nil, failure(err)
			}
			deps.changed(ctx, conv)
			return view(t), nil
		},
	}, {
		Name:        "list_tasks",
		Description: "List the conversation's tasks, oldest first, and a summary.",
		Parameters:  json.RawMessage(`{"type": "object", "properties": {}, "additionalProperties": false}`),
		Source:      tools.SourceBuiltin,
		Class:       tools.ClassLocal, Effects: local, Provenance: nothing,
		Kind: tools.KindRead,
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			ts, err := deps.Store.ListTasks(ctx, conversation(call))
			if err != nil {
				return nil, err
			}
			return list(ts), nil
		},
	}}
}

func conversation(call *tools.Call) string {
	if call.ConversationID == "" {
		return DefaultConversation
	}
	return call.ConversationID
}

func list(ts []storage.Task) ListResult {
	out := ListResult{Tasks: make([]Task, 0, len(ts))}
	counts := map[string]int{}
	for _, t := range ts {
		out.Tasks = append(out.Tasks, view(t))
		counts[t.Status]++
	}
	if len(ts) == 0 {
		out.Summary = "no tasks"
		return out
	}
	var parts []string
	for _, s := range storage.TaskStatuses {
		parts = append(parts, strconv.Itoa(counts[s])+" "+s)
	}
	out.Summary = strconv.Itoa(len(ts)) + " tasks: " + strings.Join(parts, ", ")
	return out
}

// changed tells the UI. The change has committed whatever happens here, so a failed
// re-read only costs the live view one update, not the call its success.
func (d Deps) changed(ctx context.Context, conv string) {
	if d.OnChange == nil {
		return
	}
	ts, err := d.Store.ListTasks(ctx, conv)
	if err != nil {
		return
	}
	d.OnChange(conv, list(ts).Tasks)
}

// taskID accepts the id as the string the tools return or as a number, since models
// write it either way.
func taskID(raw json.RawMessage) (int64, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		s = string(raw)
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(s), "#"), 10, 64)
	if err != nil || id < 1 {
		return 0, tools.Failf(tools.CodeInvalidParams, "task_id must be a task's id as list_tasks shows it (like \"3\"), not %s", orMissing(raw))
	}
	return id, nil
}

func orMissing(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "missing"
	}
	return string(raw)
}

// failure adds to a missing task where to look; the pipeline maps storage's kinds
// to result codes.
func failure(err error) error {
	if errors.Is(err, storage.ErrTaskNotFound) {
		return fmt.Errorf("%w; list_tasks shows this conversation's tasks", err)
	}
	return err
}

// local: a task call reaches nothing outside the host.
func local(context.Context, *tools.Call) (tools.Effect, error) { return tools.Effect{}, nil }

// nothing: a task's text is the model's own words, no content seen.
func nothing(*tools.Call, tools.Effect, *tools.Result) tools.Provenance { return tools.Provenance{} }
