package search

import (
	"fmt"
	"net/url"

	"github.com/ferryhq/ferry/host/config"
)

// Setting and secret keys. Keys are secrets, not settings, because settings travel to
// the options page and `ferry config list`; secrets never leave the host.
const (
	SettingEngine   = "search.engine"
	SettingGoogleCX = "search.google.cx"

	SecretBingKey   = "search.bing.key"
	SecretGoogleKey = "search.google.key"
)

// Engine names as written in the search.engine setting.
const (
	EngineDuckDuckGo = "duckduckgo"
	EngineBing       = "bing"
	EngineBaidu      = "baidu"
	EngineGoogle     = "google"
)

// Engines lists every engine, the default first.
var Engines = []string{EngineDuckDuckGo, EngineBing, EngineBaidu, EngineGoogle}

// EndpointSetting is the key of an engine's endpoint setting. Every endpoint is a
// setting so that tests (and people behind a mirror or a compatible API) can point an
// engine elsewhere.
func EndpointSetting(engine string) string { return "search." + engine + ".endpoint" }

var defaultEndpoints = map[string]string{
	EngineDuckDuckGo: "https://html.duckduckgo.com/html/",
	EngineBing:       "https://api.bing.microsoft.com/v7.0/search",
	EngineBaidu:      "https://www.baidu.com/s",
	EngineGoogle:     "https://www.googleapis.com/customsearch/v1",
}

var labels = map[string]string{
	EngineDuckDuckGo: "DuckDuckGo",
	EngineBing:       "Bing",
	EngineBaidu:      "Baidu",
	EngineGoogle:     "Google Custom Search",
}

func init() {
	config.Register(config.Setting{
		Key: SettingEngine,
		Description: "the web_search engine: duckduckgo (no key), bing (secret search.bing.key), " +
			"baidu (no key) or google (secret search.google.key and setting search.google.cx)",
		Default:  EngineDuckDuckGo,
		Validate: config.OneOf(Engines...),
	})
	for _, e := range Engines {
		config.Register(config.Setting{
			Key:         EndpointSetting(e),
			Description: fmt.Sprintf("the %s search endpoint web_search calls (an http or https URL)", labels[e]),
			Default:     defaultEndpoints[e],
			Validate:    validEndpoint,
		})
	}
	config.Register(config.Setting{
		Key:         SettingGoogleCX,
		Description: "the Programmable Search Engine ID (cx) the google engine searches with; its API key is the secret search.google.key",
		Default:     "",
	})
}

func validEndpoint(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("must be an absolute http or https URL, like %s", defaultEndpoints[EngineDuckDuckGo])
	}
	return nil
}
