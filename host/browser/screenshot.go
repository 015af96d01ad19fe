package browser

import (
	"context"
	"encoding/json"
	"math"
	"strings"

	"github.com/ferryhq/ferry/host/tools"
)

// Image is an image a tool hands to the model. DataURL is "data:<mime>;base64,…";
// Bytes is the decoded size.
type Image struct {
	DataURL  string `json:"data_url"`
	MimeType string `json:"mime_type"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	Bytes    int    `json:"bytes"`
}

// ScreenshotResult is browser_screenshot's result. The agent loop turns Image into
// an image part of the model request (see the package documentation).
type ScreenshotResult struct {
	TabID int    `json:"tab_id,omitempty"`
	Image Image  `json:"image"`
	Note  string `json:"note,omitempty"`
}

// ImageFromResult finds the image of a tool result, whether the agent loop holds the
// result as returned (*ScreenshotResult) or decoded from JSON ({"image": {…}}).
func ImageFromResult(result any) (Image, bool) {
	switch r := result.(type) {
	case *ScreenshotResult:
		return r.Image, r != nil && r.Image.DataURL != ""
	case ScreenshotResult:
		return r.Image, r.Image.DataURL != ""
	}
	raw, ok := result.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = json.Marshal(result); err != nil {
			return Image{}, false
		}
	}
	var r struct {
		Image *Image `json:"image"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Image == nil || !strings.HasPrefix(r.Image.DataURL, "data:image/") {
		return Image{}, false
	}
	return *r.Image, true
}

// decodedSize is the byte size of a base64 data URL's payload.
func decodedSize(dataURL string) int {
	_, b64, ok := strings.Cut(dataURL, ",")
	if !ok {
		return 0
	}
	n := len(b64) / 4 * 3
	if strings.HasSuffix(b64, "==") {
		n -= 2
	} else if strings.HasSuffix(b64, "=") {
		n--
	}
	return n
}

// Screenshot sizes: the first try is the contract's default; each retry scales the
// width by the square root of the overshoot (JPEG size goes roughly with the pixel
// count) and lowers the quality, down to floors below which text is unreadable.
const (
	shotWidth      = 1280
	shotQuality    = 70
	minShotWidth   = 320
	minShotQuality = 30
	shotTries      = 4
)

func (d Deps) screenshot() tools.Tool {
	return tools.Tool{
		Name: "browser_screenshot",
		Description: "A screenshot of the tab's visible part, as an image (JPEG). It costs far more than browser_snapshot " +
			"or get_tab_content: use those to find elements and read text.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"tab_id":` + tabIDOptional + `},"additionalProperties":false}`),
		Source:     tools.SourceBuiltin, Kind: tools.KindRead, Timeout: toolTimeout(shotTries * callTimeout),
		Available: d.available,
		// The picture is the page's; its pixels hold no link to follow.
		Class: tools.ClassRead, Effects: d.effects(nil), Provenance: readsPage(false),
		Run: func(ctx context.Context, call *tools.Call) (any, error) {
			args, err := decodeArgs(call)
			if err != nil {
				return nil, err
			}
			tabDefault(args, call)
			limit := d.settings(ctx).Int(SettingScreenshotMaxBytes)
			width, quality := shotWidth, shotQuality
			var img Image
			for try := 0; try < shotTries; try++ {
				args["format"], args["quality"], args["max_width"] = "jpeg", quality, width
				img = Image{}
				if err := d.call(ctx, "browser.page.screenshot", args, &img, callTimeout); err != nil {
					return nil, err
				}
				if !strings.HasPrefix(img.DataURL, "data:image/") {
					return nil, tools.Failf(tools.CodeHandlerError, "the browser's screenshot is not an image data URL")
				}
				img.MimeType, _, _ = strings.Cut(strings.TrimPrefix(img.DataURL, "data:"), ";")
				// The size that matters is what travels: measure it rather than
				// trust the count.
				img.Bytes = decodedSize(img.DataURL)
				if img.Bytes <= limit {
					res := &ScreenshotResult{Image: img}
					if t, ok := args["tab_id"].(int); ok {
						res.TabID = t
					} else if f, ok := args["tab_id"].(float64); ok {
						res.TabID = int(f)
					}
					if try > 0 {
						res.Note = "reduced to fit the setting " + SettingScreenshotMaxBytes
					}
					return res, nil
				}
				if width <= minShotWidth && quality <= minShotQuality {
					break
				}
				base := width
				if img.Width > 0 && img.Width < base {
					base = img.Width
				}
				width = max(minShotWidth, int(float64(base)*math.Sqrt(float64(limit)/float64(img.Bytes))*0.9))
				quality = max(minShotQuality, quality-15)
			}
			return nil, tools.Failf(tools.CodeActionUnavailable,
				"the screenshot is %d bytes even at %d pixels wide and JPEG quality %d, over the setting %s (%d); raise it, or read the page with get_tab_content",
				img.Bytes, width, quality, SettingScreenshotMaxBytes, limit)
		},
	}
}
