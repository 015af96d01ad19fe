package model

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
)

// Options are the request options vendors of one wire format do not agree on. They
// are detected from the base URL and the model where the vendor is known, and can
// be set per provider (OptionSettings) where detection cannot know.
type Options struct {
	// StreamUsage sends stream_options {"include_usage": true}, without which
	// OpenAI streams no usage. Mistral's API, Fireworks and older Azure API versions
	// refuse the field.
	StreamUsage bool `json:"stream_usage"`
	// MaxTokensField names the answer-length field: max_tokens, or
	// max_completion_tokens, which OpenAI's reasoning models (o1, o3, gpt-5)
	// require and which api.openai.com takes for every model.
	MaxTokensField string `json:"max_tokens_field"`
	// APIVersion, when set, is Azure OpenAI's classic API: the deployment in the
	// base URL and ?api-version=… on every call.
	APIVersion string `json:"api_version,omitempty"`
	// KeyHeader is where the key goes: "authorization" (Bearer) or "api-key"
	// (Azure), or "x-api-key" (Anthropic).
	KeyHeader string `json:"key_header"`
	// SendReasoning sends an assistant turn's reasoning back as reasoning_content:
	// DeepSeek's thinking mode refuses a history whose tool-calling turns lack it.
	SendReasoning bool `json:"send_reasoning"`
	// PromptCache marks Anthropic cache_control breakpoints on the tools, the
	// system prompt and the conversation so far.
	PromptCache bool `json:"prompt_cache"`
}

// Values of the OptionSettings switches.
const (
	OptionAuto = "auto"
	OptionOn   = "on"
	OptionOff  = "off"
)

// Values of MaxTokensField.
const (
	FieldMaxTokens           = "max_tokens"
	FieldMaxCompletionTokens = "max_completion_tokens"
)

// OptionSettings are a provider's stored choices; "" and "auto" let detection
// decide.
type OptionSettings struct {
	StreamUsage    string `json:"stream_usage,omitempty"`     // auto, on, off
	MaxTokensField string `json:"max_tokens_field,omitempty"` // auto, max_tokens, max_completion_tokens
	APIVersion     string `json:"api_version,omitempty"`      // Azure classic; "" none (detected for …/openai/deployments/… URLs)
	SendReasoning  string `json:"send_reasoning,omitempty"`   // auto, on, off
	PromptCache    string `json:"prompt_cache,omitempty"`     // auto, on, off
}

// azureDefaultAPIVersion is used for a classic Azure URL that names none: the
// newest generally available version when this was written.
const azureDefaultAPIVersion = "2024-10-21"

// azureStreamUsageSince is the first Azure API version that accepts stream_options
// and max_completion_tokens.
const azureStreamUsageSince = "2024-09-01"

// Check refuses values that are none of the allowed ones.
func (s OptionSettings) Check() error {
	for _, f := range []struct{ name, v string }{{"stream usage", s.StreamUsage}, {"send reasoning", s.SendReasoning}, {"prompt cache", s.PromptCache}} {
		switch f.v {
		case "", OptionAuto, OptionOn, OptionOff:
		default:
			return invalidf("%s %q: use auto, on or off", f.name, f.v)
		}
	}
	switch s.MaxTokensField {
	case "", OptionAuto, FieldMaxTokens, FieldMaxCompletionTokens:
	default:
		return invalidf("max tokens field %q: use auto, max_tokens or max_completion_tokens", s.MaxTokensField)
	}
	if s.APIVersion != "" && !apiVersionRE().MatchString(s.APIVersion) {
		return invalidf("api version %q: give an Azure API version such as 2024-10-21 or 2025-04-01-preview", s.APIVersion)
	}
	return nil
}

// The expressions are compiled when first used, not while the host process starts.
var (
	apiVersionRE = lazyRegexp(`^\d{4}-\d{2}-\d{2}(-preview)?$`)
	// OpenAI's reasoning models, which refuse max_tokens.
	reasoningModelRE = lazyRegexp(`^(?:openai/)?(?:o\d|gpt-5)`)
	// Mistral's own model names, wherever they are served from.
	mistralModelRE = lazyRegexp(`^(?:mistralai/)?(?:mistral|magistral|codestral|devstral|ministral|pixtral|open-mistral|open-mixtral|voxtral)`)
)

func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// DetectOptions settles a provider's options: the stored settings where they are
// not auto, otherwise what the base URL and the model say of the vendor.
func DetectOptions(kind, baseURL, modelName string, s OptionSettings) Options {
	host, path := "", ""
	if u, err := url.Parse(baseURL); err == nil {
		host, path = strings.ToLower(u.Hostname()), u.Path
	}
	m := strings.ToLower(modelName)
	if kind == KindAnthropic {
		return Options{KeyHeader: "x-api-key", PromptCache: s.PromptCache != OptionOff}
	}
	azure := strings.HasSuffix(host, ".openai.azure.com") || strings.HasSuffix(host, ".cognitiveservices.azure.com") ||
		strings.HasSuffix(host, ".services.ai.azure.com")
	o := Options{KeyHeader: "authorization", APIVersion: s.APIVersion, MaxTokensField: FieldMaxTokens}
	if azure {
		o.KeyHeader = "api-key"
		if o.APIVersion == "" && strings.Contains(path, "/openai/deployments/") {
			o.APIVersion = azureDefaultAPIVersion
		}
	}
	if o.APIVersion != "" {
		o.KeyHeader = "api-key"
	}

	switch s.StreamUsage {
	case OptionOn:
		o.StreamUsage = true
	case OptionOff:
	default:
		o.StreamUsage = !(host == "api.mistral.ai" || mistralModelRE().MatchString(m) ||
			strings.HasSuffix(host, "fireworks.ai") ||
			(o.APIVersion != "" && o.APIVersion < azureStreamUsageSince))
	}

	switch s.MaxTokensField {
	case FieldMaxTokens, FieldMaxCompletionTokens:
		o.MaxTokensField = s.MaxTokensField
	default:
		// api.openai.com and Azure take max_completion_tokens for every model, and
		// the reasoning models nothing else; elsewhere only those models need it.
		if host == "api.openai.com" || (azure && o.APIVersion == "") || (o.APIVersion >= azureStreamUsageSince) || reasoningModelRE().MatchString(m) {
			o.MaxTokensField = FieldMaxCompletionTokens
		}
	}

	switch s.SendReasoning {
	case OptionOn:
		o.SendReasoning = true
	case OptionOff:
	default:
		o.SendReasoning = host == "api.deepseek.com" || strings.Contains(m, "deepseek")
	}
	return o
}

// Describe says in a line which options are in force, for `ferry provider test`.
func (o Options) Describe(kind string) string {
	if kind == KindAnthropic {
		return fmt.Sprintf("prompt cache %s", onOff(o.PromptCache))
	}
	s := fmt.Sprintf("stream_options %s, length field %s, reasoning sent back %s, key in %s", onOff(o.StreamUsage), o.MaxTokensField, onOff(o.SendReasoning), o.KeyHeader)
	if o.APIVersion != "" {
		s += ", Azure api-version " + o.APIVersion
	}
	return s
}

func onOff(b bool) string {
	if b {
		return OptionOn
	}
	return OptionOff
}
