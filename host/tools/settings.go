package tools

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/host/config"
)

// Settings keys of the pipeline and the audit log (`ferry config list` documents them).
const (
	SettingReadStore        = "tools.read_store"
	SettingWriteStore       = "tools.write_store"
	SettingEmitEvents       = "tools.emit_events"
	SettingDisabled         = "tools.disabled"
	SettingDeniedOrigins    = "tools.denied_origins"
	SettingConfirm          = "tools.confirm"
	SettingConfirmWrites    = "tools.confirm_writes"
	SettingConfirmTimeout   = "tools.confirm_timeout_seconds"
	SettingRunTimeout       = "tools.run_timeout_seconds"
	SettingAskTimeout       = "tools.ask_timeout_seconds"
	SettingRepeatLimit      = "tools.loop.repeat_limit"
	SettingRepeatWindow     = "tools.loop.window_seconds"
	SettingRateConversation = "tools.rate.per_conversation"
	SettingRateGlobal       = "tools.rate.global"
	SettingAuditRetention   = "audit.retention_days"
)

func boolSetting(v string) error { return config.OneOf("true", "false")(v) }

func init() {
	for _, s := range []config.Setting{
		{Key: SettingReadStore, Default: "true", Validate: boolSetting,
			Description: "global readStore flag: tools that declare readStore may read (seed 002's model)"},
		{Key: SettingWriteStore, Default: "false", Validate: boolSetting,
			Description: "global writeStore flag: tools that declare writeStore may write only when this is true too"},
		{Key: SettingEmitEvents, Default: "true", Validate: boolSetting,
			Description: "global emitEvents flag: tools that declare emitEvents may emit events"},
		{Key: SettingDisabled, Default: "",
			Description: "comma-separated tool names refused with PERMISSION_DENIED, whoever calls"},
		{Key: SettingDeniedOrigins, Default: "",
			Description: "comma-separated origins (https://example.com) whose page actions and calls are refused with PERMISSION_DENIED"},
		{Key: SettingConfirm, Default: "",
			Description: "comma-separated tool names that always ask a person before running"},
		{Key: SettingConfirmWrites, Default: "false", Validate: boolSetting,
			Description: "ask a person before every tool of kind write"},
		{Key: SettingConfirmTimeout, Default: "30", Validate: config.IntRange(1, 600),
			Description: "seconds a confirmation waits for an answer; then CONFIRM_TIMEOUT (a denial)"},
		{Key: SettingRunTimeout, Default: "30", Validate: config.IntRange(1, 3600),
			Description: "seconds a tool may run unless it sets its own bound; then TIMEOUT"},
		{Key: SettingAskTimeout, Default: "300", Validate: config.IntRange(10, 3600),
			Description: "seconds ask_user waits for the person; then {answer: null, reason: \"timeout\"}"},
		{Key: SettingRepeatLimit, Default: "5", Validate: config.IntRange(0, 1000),
			Description: "identical calls (tool and arguments) allowed per conversation within the window; the next is LOOP_DETECTED (0: no limit)"},
		{Key: SettingRepeatWindow, Default: "60", Validate: config.IntRange(1, 86400),
			Description: "seconds over which identical calls are counted"},
		{Key: SettingRateConversation, Default: "60", Validate: config.IntRange(0, 1000000),
			Description: "tool calls a minute per conversation (token bucket, bursts up to the same number); 0: no limit"},
		{Key: SettingRateGlobal, Default: "600", Validate: config.IntRange(0, 1000000),
			Description: "tool calls a minute in this host process, all conversations together; 0: no limit"},
		{Key: SettingAuditRetention, Default: "30", Validate: config.IntRange(0, 36500),
			Description: "days the audit log keeps a row (pruned at start and daily); 0 keeps everything"},
	} {
		config.Register(s)
	}
}

// SettingsSource is where the pipeline reads settings (storage.DB satisfies it).
type SettingsSource interface {
	ListSettings(ctx context.Context) (map[string]string, error)
}

// Policy is the settings the pipeline acts on, parsed once per refresh.
type Policy struct {
	ReadStore, WriteStore, EmitEvents bool
	Disabled, DeniedOrigins, Confirm  map[string]bool
	ConfirmWrites                     bool
	ConfirmTimeout, RunTimeout        time.Duration
	AskTimeout                        time.Duration
	RepeatLimit                       int
	RepeatWindow                      time.Duration
	RateConversation, RateGlobal      int
	AuditRetention                    time.Duration
}

// policyTTL is how stale the pipeline's view of settings may get. A setting changed
// with `ferry config set` (another process) reaches a running host within it; reading
// SQLite on every call instead would cost more than the whole pipeline.
const policyTTL = time.Second

type policyCache struct {
	src SettingsSource
	now func() time.Time

	mu  sync.Mutex
	cur *Policy
	at  time.Time
}

func (c *policyCache) get(ctx context.Context) *Policy {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur != nil && c.now().Sub(c.at) < policyTTL {
		return c.cur
	}
	var stored map[string]string
	if c.src != nil {
		// On a read error the last known policy (or the defaults) stays in force.
		var err error
		if stored, err = c.src.ListSettings(ctx); err != nil && c.cur != nil {
			return c.cur
		}
	}
	c.cur = ParsePolicy(stored)
	c.at = c.now()
	return c.cur
}

func (c *policyCache) invalidate() {
	c.mu.Lock()
	c.cur = nil
	c.mu.Unlock()
}

// ParsePolicy reads a policy from stored settings, defaults for the rest. A stored
// value that no longer validates falls back to the default.
func ParsePolicy(stored map[string]string) *Policy {
	get := func(key string) string {
		s, err := config.Lookup(key)
		if err != nil {
			panic(err) // our own key: registered in init above
		}
		if v, ok := stored[key]; ok && s.Check(v) == nil {
			return v
		}
		return s.Default
	}
	b := func(key string) bool { return get(key) == "true" }
	n := func(key string) int { v, _ := strconv.Atoi(get(key)); return v }
	secs := func(key string) time.Duration { return time.Duration(n(key)) * time.Second }
	set := func(key string) map[string]bool {
		m := map[string]bool{}
		for _, part := range strings.Split(get(key), ",") {
			if part = strings.TrimSpace(part); part != "" {
				m[strings.TrimSuffix(part, "/")] = true
			}
		}
		return m
	}
	return &Policy{
		ReadStore: b(SettingReadStore), WriteStore: b(SettingWriteStore), EmitEvents: b(SettingEmitEvents),
		Disabled: set(SettingDisabled), DeniedOrigins: set(SettingDeniedOrigins), Confirm: set(SettingConfirm),
		ConfirmWrites:  b(SettingConfirmWrites),
		ConfirmTimeout: secs(SettingConfirmTimeout), RunTimeout: secs(SettingRunTimeout),
		AskTimeout:  secs(SettingAskTimeout),
		RepeatLimit: n(SettingRepeatLimit), RepeatWindow: secs(SettingRepeatWindow),
		RateConversation: n(SettingRateConversation), RateGlobal: n(SettingRateGlobal),
		AuditRetention: time.Duration(n(SettingAuditRetention)) * 24 * time.Hour,
	}
}

// AuditRetention reads the retention setting now (for the audit writer's pruning).
func AuditRetention(ctx context.Context, src SettingsSource) time.Duration {
	var stored map[string]string
	if src != nil {
		stored, _ = src.ListSettings(ctx)
	}
	return ParsePolicy(stored).AuditRetention
}
