package model

import "context"

// TraceHeader carries the trace id of the run a model request belongs to, so that
// a gateway between the host and the vendor (ferry gateway) can record it and an
// admin can match its audit rows to the host's. It is the same id as the run's
// tool calls carry in the host's audit log.
const TraceHeader = "X-Ferry-Trace-Id"

type traceKey struct{}

// WithTraceID returns ctx carrying a run's trace id for the requests made with it.
func WithTraceID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, traceKey{}, id)
}

// TraceID is the trace id ctx carries, "" when none.
func TraceID(ctx context.Context) string {
	id, _ := ctx.Value(traceKey{}).(string)
	return id
}
