package agent

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ferryhq/ferry/host/browser"
	"github.com/ferryhq/ferry/host/model"
	"github.com/ferryhq/ferry/host/tools"
)

// toolResultMessage is the message that gives the model one tool's result. A result
// that carries an image (browser_screenshot) keeps its data URL out of the text — a
// base64 JPEG read as text is useless to a model and costs a fortune in tokens — and
// attaches the image to the message instead, which each provider sends as its
// vendor shows images (Anthropic: an image block inside the tool_result; OpenAI-
// compatible: a user message with the images after the tool results). A text-only
// model gets no image, and the result says so.
func (r *Run) toolResultMessage(id string, res tools.Result) model.Message {
	if !res.Success {
		return toolMessage(id, res)
	}
	img, ok := browser.ImageFromResult(res.Result)
	if !ok {
		return toolMessage(id, res)
	}
	textOnly := r.prov.Info().TextOnly
	note := fmt.Sprintf("[image attached: %s, %d×%d, %d bytes; you see it after this result]", img.MimeType, img.Width, img.Height, img.Bytes)
	if textOnly {
		note = fmt.Sprintf("[image left out: the model of provider %q does not take images (it is set as text-only); read the page with get_tab_content or browser_snapshot instead]", r.prov.Info().ID)
	}
	stripped, err := replaceDataURL(res.Result, note)
	if err != nil {
		return toolMessage(id, tools.Result{Code: tools.CodeHandlerError, Reason: "the tool's image result could not be prepared for the model: " + err.Error()})
	}
	res.Result = stripped
	msg := toolMessage(id, res)
	if !textOnly {
		msg.Images = []string{img.DataURL}
	}
	return msg
}

// replaceDataURL is result as JSON with image.data_url replaced by note.
func replaceDataURL(result any, note string) (json.RawMessage, error) {
	b, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return nil, err
	}
	img, ok := m["image"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("no image object in the result")
	}
	img["data_url"] = note
	return json.Marshal(m)
}

// imageTokens is what one attached image is counted as when the request's size is
// estimated: vendors bill a screenshot by its pixels (Anthropic about
// width×height/750: 1280×800 is about 1,400 tokens), not by its base64 length.
const imageTokens = 1600

// imageAdjustment is how much the JSON length of v overstates its size because of
// attached images: the bytes of their data URLs, and how many there are.
func imageAdjustment(v any) (urlBytes, count int) {
	var msgs []model.Message
	switch x := v.(type) {
	case model.Message:
		msgs = []model.Message{x}
	case *model.Message:
		msgs = []model.Message{*x}
	case model.Request:
		msgs = x.Messages
	case *model.Request:
		msgs = x.Messages
	case []model.Message:
		msgs = x
	}
	for _, m := range msgs {
		for _, img := range m.Images {
			urlBytes += len(img)
			count++
		}
	}
	return urlBytes, count
}
