package toolbox

import (
	"context"
	"errors"
	"fmt"

	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/web"
	"github.com/ferryhq/ferry/storage"
)

// summarizer distils fetched or captured content through the default model provider:
// the `prompt` of web_fetch and get_tab_content.
type summarizer struct{ db *storage.DB }

const summarySystem = "You distil web content for an AI agent. Answer the request using only the content given. " +
	"Be faithful and specific, keep names, numbers and links that matter, and say so when the content does not answer it."

func (s summarizer) Summarize(ctx context.Context, prompt, content string) (string, error) {
	p, err := model.Open(ctx, s.db, "")
	if errors.Is(err, model.ErrNoProvider) {
		return "", web.ErrNoModel
	}
	if err != nil {
		return "", err
	}
	// Leave room for the answer: content gets about 60% of the context window
	// (4 bytes a token is the usual estimate).
	if limit := p.Info().ContextWindow * 4 * 6 / 10; limit > 0 && len(content) > limit {
		content = content[:limit] + "\n[content cut to fit the model's context window]"
	}
	resp, err := p.Stream(ctx, model.Request{
		System:   summarySystem,
		Messages: []model.Message{{Role: model.RoleUser, Content: fmt.Sprintf("Request: %s\n\nContent:\n%s", prompt, content)}},
	}, nil, nil)
	if err != nil {
		return "", err
	}
	return resp.Text, nil
}
