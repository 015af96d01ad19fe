package search

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/ferryhq/ferry/buildinfo"
	"github.com/ferryhq/ferry/host/tools"
)

// bing asks the Bing Web Search API v7 (GET …/v7.0/search, key in the
// Ocp-Apim-Subscription-Key header). Its answer's webPages.value holds the hits as
// {name, url, snippet}; url is already the page itself.
func (s *Searcher) bing(ctx context.Context, cfg engineConfig, query string, n int) ([]Result, error) {
	u := *cfg.endpoint
	q := u.Query()
	q.Set("q", query)
	q.Set("count", strconv.Itoa(n))
	q.Set("responseFilter", "Webpages")
	// Raw text without hit decorations: there is nothing to strip or unescape then,
	// though clean still strips them should a proxy turn them back on.
	q.Set("textDecorations", "false")
	q.Set("textFormat", "Raw")
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Ocp-Apim-Subscription-Key", cfg.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "ferry/"+buildinfo.Version)
	resp, body, err := s.do(EngineBing, req)
	if err != nil {
		return nil, err
	}
	var a struct {
		Type     string `json:"_type"`
		WebPages *struct {
			Value []struct {
				Name    string `json:"name"`
				URL     string `json:"url"`
				Snippet string `json:"snippet"`
			} `json:"value"`
		} `json:"webPages"`
		// ErrorResponse, for every 4xx of the API itself.
		Errors []struct {
			Code        string `json:"code"`
			SubCode     string `json:"subCode"`
			Message     string `json:"message"`
			MoreDetails string `json:"moreDetails"`
		} `json:"errors"`
		// The Azure gateway in front of the API answers a bad key or quota in its own
		// shape, before the API sees the request.
		Error *struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	jerr := json.Unmarshal(body, &a)
	if resp.StatusCode != http.StatusOK || a.Type == "ErrorResponse" || len(a.Errors) > 0 || a.Error != nil {
		var msgs, reasons []string
		for _, e := range a.Errors {
			msgs = append(msgs, firstNonEmpty(e.MoreDetails, e.Message))
			reasons = append(reasons, e.Code, e.SubCode)
		}
		if a.Error != nil {
			msgs = append(msgs, a.Error.Message)
			reasons = append(reasons, toString(a.Error.Code))
		}
		msgs = append(msgs, a.Message)
		return nil, apiFailure(EngineBing, resp.StatusCode, msgs, reasons, "`ferry secret set "+SecretBingKey+"`")
	}
	if jerr != nil {
		return nil, tools.Failf(tools.CodeHandlerError, "Bing's answer is not the Web Search API's JSON (%v); check %s", jerr, EndpointSetting(EngineBing))
	}
	out := []Result{}
	if a.WebPages == nil {
		return out, nil
	}
	for _, v := range a.WebPages.Value {
		if !httpURL(v.URL) {
			continue
		}
		out = append(out, Result{Title: cleanAPI(v.Name), URL: v.URL, Snippet: cleanAPI(v.Snippet)})
	}
	return out, nil
}

// google asks the Custom Search JSON API (GET …/customsearch/v1?key=&cx=&q=). Hits are
// items[{title, link, snippet}]; a query without hits has no items at all.
func (s *Searcher) google(ctx context.Context, cfg engineConfig, query string, n int) ([]Result, error) {
	u := *cfg.endpoint
	q := u.Query()
	q.Set("key", cfg.key)
	q.Set("cx", cfg.cx)
	q.Set("q", query)
	q.Set("num", strconv.Itoa(n))
	q.Set("fields", "items(title,link,snippet)")
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "ferry/"+buildinfo.Version)
	resp, body, err := s.do(EngineGoogle, req)
	if err != nil {
		return nil, err
	}
	var a struct {
		Items []struct {
			Title   string `json:"title"`
			Link    string `json:"link"`
			Snippet string `json:"snippet"`
		} `json:"items"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
			Errors  []struct {
				Message string `json:"message"`
				Domain  string `json:"domain"`
				Reason  string `json:"reason"`
			} `json:"errors"`
		} `json:"error"`
	}
	jerr := json.Unmarshal(body, &a)
	if resp.StatusCode != http.StatusOK || a.Error != nil {
		var msgs, reasons []string
		if e := a.Error; e != nil {
			msgs = append(msgs, e.Message)
			reasons = append(reasons, e.Status)
			for _, d := range e.Errors {
				reasons = append(reasons, d.Reason, d.Domain)
			}
		}
		return nil, apiFailure(EngineGoogle, resp.StatusCode, msgs, reasons, "`ferry secret set "+SecretGoogleKey+"`")
	}
	if jerr != nil {
		return nil, tools.Failf(tools.CodeHandlerError, "Google's answer is not the Custom Search JSON API's JSON (%v); check %s", jerr, EndpointSetting(EngineGoogle))
	}
	out := []Result{}
	for _, it := range a.Items {
		if !httpURL(it.Link) {
			continue
		}
		out = append(out, Result{Title: cleanAPI(it.Title), URL: it.Link, Snippet: cleanAPI(it.Snippet)})
	}
	return out, nil
}

// apiFailure maps an API's error answer to a failure that quotes the engine's own
// message: a quota or rate limit is RATE_LIMITED, a refused key ACTION_UNAVAILABLE
// with the command that replaces it, anything else HANDLER_ERROR.
func apiFailure(engine string, status int, msgs, reasons []string, keyCmd string) error {
	msg := firstNonEmpty(msgs...)
	if msg == "" {
		msg = "HTTP " + strconv.Itoa(status) + " " + http.StatusText(status)
	} else if status != http.StatusOK {
		msg = "HTTP " + strconv.Itoa(status) + ": " + msg
	}
	why := strings.ToLower(strings.Join(reasons, " ") + " " + msg)
	switch {
	case status == http.StatusTooManyRequests || containsAny(why, "ratelimit", "limitexceeded", "quota", "resource_exhausted", "outofcallvolume"):
		return blocked(engine, "refused the search for its quota or rate limit ("+msg+")")
	case status == http.StatusUnauthorized || status == http.StatusForbidden ||
		containsAny(why, "api key", "subscription key", "invalidauthorization", "keyinvalid", "permission_denied", "accessnotconfigured"):
		return tools.Failf(tools.CodeActionUnavailable,
			"%s refused the API key (%s); store a valid one with %s, or switch to a keyless engine with `ferry config set search.engine duckduckgo`",
			labels[engine], msg, keyCmd)
	}
	return tools.Failf(tools.CodeHandlerError, "%s answered with an error: %s", labels[engine], msg)
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return ""
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}
