package model_test

import (
	"context"
	"testing"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/model/modeltest"
)

// TestTraceHeader: a call made for a run carries the run's trace id, in both wire
// formats, and a call made for none carries no header.
func TestTraceHeader(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := modeltest.New(t, kind, modeltest.Text("ok"), modeltest.Text("ok"))
		p := newProvider(t, srv, nil, "")
		req := model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}
		if _, err := p.Stream(model.WithTraceID(context.Background(), "trace-abc123"), req, nil, nil); err != nil {
			t.Fatal(err)
		}
		if got := srv.Last().Header.Get(model.TraceHeader); got != "trace-abc123" {
			t.Fatalf("%s = %q", model.TraceHeader, got)
		}
		if _, err := p.Stream(context.Background(), req, nil, nil); err != nil {
			t.Fatal(err)
		}
		if _, ok := srv.Last().Header[model.TraceHeader]; ok {
			t.Fatal("a call outside any run sent a trace id")
		}
	})
}
