package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferryhq/ferry/host/browser"
	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/model/modeltest"
	"github.com/ferryhq/ferry/host/tools"
	"github.com/ferryhq/ferry/storage"
)

const shotURL = "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/"

// shotTool answers as browser_screenshot does: a *browser.ScreenshotResult.
func shotTool() tools.Tool {
	return tools.Tool{
		Name: "shot", Description: "a screenshot", Kind: tools.KindRead,
		Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Run: func(ctx context.Context, c *tools.Call) (any, error) {
			return &browser.ScreenshotResult{TabID: 7, Image: browser.Image{DataURL: shotURL, MimeType: "image/jpeg", Width: 1280, Height: 800, Bytes: 96}}, nil
		},
	}
}

// A screenshot reaches the model as an image, through the real clients and the fake
// vendors: an image block inside Anthropic's tool_result, an image message after
// OpenAI's tool results; the text result holds a placeholder, not the data URL. A
// text-only provider gets no image and is told why.
func TestScreenshotReachesModel(t *testing.T) {
	for _, kind := range []string{modeltest.OpenAI, modeltest.Anthropic} {
		for _, textOnly := range []bool{false, true} {
			name := kind + "/vision"
			if textOnly {
				name = kind + "/text-only"
			}
			t.Run(name, func(t *testing.T) {
				fake := modeltest.New(t, kind,
					modeltest.Tools("shot", `{}`, "echo", `{"text":"beside"}`),
					modeltest.Text("I see the page."),
				)
				e := newEnv(t, &fakeProvider{})
				if err := e.reg.Register(shotTool()); err != nil {
					t.Fatal(err)
				}
				ctx := context.Background()
				if _, _, err := e.db.SaveProvider(ctx, storage.ProviderConfig{ID: "v", Kind: kind, BaseURL: fake.URL, Model: "fake-model", TextOnly: textOnly, Default: true}); err != nil {
					t.Fatal(err)
				}
				e.db.SetSecret(ctx, "provider.v.key", []byte("sk-test"))
				e.m.opts.Open = func(ctx context.Context, id string) (model.Provider, error) { return model.Open(ctx, e.db, id) }

				r, out := e.send("look at the page", "")
				if out.Status != storage.RunCompleted {
					t.Fatalf("outcome %+v", out)
				}
				last := fake.Last()
				var results []modeltest.ToolResult
				var images []string
				for _, m := range last.Messages {
					results = append(results, m.ToolResults...)
					images = append(images, m.Images...)
				}
				if len(results) != 2 {
					t.Fatalf("results the vendor got: %+v", results)
				}
				shot := results[0]
				if strings.Contains(shot.Content, "base64") {
					t.Fatalf("the data URL is in the text result: %s", shot.Content)
				}
				if !strings.Contains(results[1].Content, "beside") {
					t.Fatalf("second result: %+v", results[1])
				}
				if textOnly {
					if shot.Images != 0 || len(images) != 0 {
						t.Fatalf("a text-only model got images: %+v, %d", shot, len(images))
					}
					if !strings.Contains(shot.Content, "image left out") || !strings.Contains(shot.Content, "does not take images") {
						t.Fatalf("the result does not say the image was left out: %s", shot.Content)
					}
				} else {
					if !strings.Contains(shot.Content, "image attached") || !strings.Contains(shot.Content, `"width":1280`) {
						t.Fatalf("placeholder: %s", shot.Content)
					}
					switch kind {
					case modeltest.Anthropic:
						if shot.Images != 1 {
							t.Fatalf("no image block in the tool_result: %+v", shot)
						}
					case modeltest.OpenAI:
						// tool, tool, then the user message with the image.
						n := len(last.Messages)
						m := last.Messages[n-1]
						if m.Role != "user" || len(m.Images) != 1 || m.Images[0] != shotURL || last.Messages[n-2].Role != "tool" {
							t.Fatalf("no image message after the tool results: %+v", last.Messages)
						}
					}
				}
				// Stored as sent: a resumed conversation shows the model the same.
				msgs, err := e.db.Messages(ctx, r.ConversationID)
				if err != nil {
					t.Fatal(err)
				}
				var stored int
				for _, m := range msgs {
					stored += len(m.Images)
					if strings.Contains(m.Content, "base64,") {
						t.Fatalf("a stored message holds the data URL as text: %.200s", m.Content)
					}
				}
				if want := map[bool]int{false: 1, true: 0}[textOnly]; stored != want {
					t.Fatalf("%d stored images, want %d", stored, want)
				}
			})
		}
	}
}

// Images count by their pixels in the size estimate, not by their base64 bytes.
func TestEstimateTokensImages(t *testing.T) {
	big := "data:image/jpeg;base64," + strings.Repeat("A", 800_000)
	n := estimateTokens(model.Request{Messages: []model.Message{{Role: model.RoleTool, Content: "x", Images: []string{big}}}})
	if n > imageTokens+100 || n < imageTokens {
		t.Fatalf("estimate %d", n)
	}
}

// Switching a conversation to a text-only provider leaves the earlier images out.
func TestWithoutImages(t *testing.T) {
	in := []model.Message{{Role: model.RoleUser, Content: "a"}, {Role: model.RoleTool, Images: []string{shotURL}}}
	out := model.WithoutImages(in)
	if len(out[1].Images) != 0 || len(in[1].Images) != 1 {
		t.Fatalf("in %+v, out %+v", in, out)
	}
}
