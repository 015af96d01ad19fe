package tools

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/origins"
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
			Description: "global readStore flag: tools that declare readStore may read"},
		{Key: SettingWriteStore, Default: "false", Validate: boolSetting,
			Description: "global writeStore flag: tools that declare writeStore may write only when this is true too"},
		{Key: SettingEmitEvents, Default: "true", Validate: boolSetting,
			Description: "global emitEvents flag: tools that declare emitEvents may emit events"},
		{Key: SettingDisabled, Default: "",
			Description: "comma-separated tool names refused with PERMISSION_DENIED, whoever calls"},
		{Key: SettingDeniedOrigins, Default: "", Validate: origins.CheckList,
			Description: "comma-separated origins (https://example.com) whose page actions and calls are refused with PERMISSION_DENIED"},
		{Key: SettingConfirm, Default: "",
			Description: "comma-separated tool names that always ask a person before running"},
		{Key: SettingConfirmWrites, Default: "false", Validate: boolSetting,
			Description: "ask a person before every tool of kind write"},
		{Key: SettingConfirmTimeout, Default: "300", Validate: config.IntRange(1, 3600),
			Description: "seconds a confirmation waits for an answer; then CONFIRM_TIMEOUT (a denial)"},
		{Key: SettingRunTimeout, Default: "30", Validate: config.IntRange(1, 3600),
			Description: "seconds a tool may run unless it sets its own bound; then TIMEOUT"},
		{Key: SettingAskTimeout, Default: "300", Validate: config.IntRange(10, 3600),
			Description: "seconds ask_user waits for the person; then {answer: null, reason: \"timeout\"}"},
		{Key: SettingRepeatLimit, Default: "5", Validate: config.IntRange(0, 1000),
			Description: "times a call (tool and arguments) may give the same result in a row with nothing new in between, per run, outside client session or conversation; the next such call is LOOP_DETECTED (0: no limit)"},
		{Key: SettingRepeatWindow, Default: "60", Validate: config.IntRange(1, 86400),
			Description: "seconds within which repeated results are counted together"},
		{Key: SettingRateConversation, Default: "300", Validate: config.IntRange(0, 1000000),
			Description: "tool calls a minute per run, outside client session (each ferry mcp) or conversation (token bucket, bursts up to the same number); 0: no limit"},
		{Key: SettingRateGlobal, Default: "1200", Validate: config.IntRange(0, 1000000),
			Description: "tool calls a minute in this host process, all callers together; 0: no limit"},
		{Key: SettingAuditRetention, Default: "30", Validate: config.IntRange(0, 36500),
			Description: "days the audit log keeps a row (pruned at start and daily); 0 keeps everything"},
		{Key: SettingAllowedTools, Default: DefaultAllowedTools,
			Description: "comma-separated tools that outside agents (ferry mcp, the control socket) may call, directly or through the runs and sub-agents they start: names (model-visible or registered), * for every tool, -name to exclude one; confirmations still happen in the side panel"},
	} {
		config.Register(s)
	}
}

// Policy is the settings the pipeline acts on, parsed once per snapshot.
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
	// OutsideAllowed is mcp.allowed_tools: whether an outside agent may use a tool
	// known by any of names.
	OutsideAllowed func(names ...string) bool
}

// policyCache parses the policy again only when the settings' snapshot changed.
type policyCache struct {
	src config.Settings

	mu   sync.Mutex
	snap *config.Snapshot
	cur  *Policy
}

func (c *policyCache) get(ctx context.Context) *Policy {
	snap := config.Of(nil)
	if c.src != nil {
		snap = c.src.Snapshot(ctx)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cur == nil || snap != c.snap {
		c.cur, c.snap = PolicyOf(snap), snap
	}
	return c.cur
}

// ParsePolicy reads a policy from stored settings, defaults for the rest.
func ParsePolicy(stored map[string]string) *Policy { return PolicyOf(config.Of(stored)) }

// PolicyOf is the policy of a settings snapshot.
func PolicyOf(s *config.Snapshot) *Policy {
	set := func(key string) map[string]bool {
		m := map[string]bool{}
		for _, v := range s.List(key) {
			m[strings.TrimSuffix(v, "/")] = true
		}
		return m
	}
	denied := map[string]bool{}
	for _, o := range origins.Normalize(s.ListAsStored(SettingDeniedOrigins)) {
		denied[o] = true
	}
	return &Policy{
		ReadStore: s.Bool(SettingReadStore), WriteStore: s.Bool(SettingWriteStore), EmitEvents: s.Bool(SettingEmitEvents),
		Disabled: set(SettingDisabled), DeniedOrigins: denied, Confirm: set(SettingConfirm),
		ConfirmWrites:  s.Bool(SettingConfirmWrites),
		ConfirmTimeout: s.Seconds(SettingConfirmTimeout), RunTimeout: s.Seconds(SettingRunTimeout),
		AskTimeout:  s.Seconds(SettingAskTimeout),
		RepeatLimit: s.Int(SettingRepeatLimit), RepeatWindow: s.Seconds(SettingRepeatWindow),
		RateConversation: s.Int(SettingRateConversation), RateGlobal: s.Int(SettingRateGlobal),
		AuditRetention: time.Duration(s.Int(SettingAuditRetention)) * 24 * time.Hour,
		OutsideAllowed: OutsideRule(s.String(SettingAllowedTools)),
	}
}

// AuditRetention reads the retention setting now (for the audit writer's pruning).
func AuditRetention(ctx context.Context, src config.Settings) time.Duration {
	if src == nil {
		return PolicyOf(nil).AuditRetention
	}
	return PolicyOf(src.Snapshot(ctx)).AuditRetention
}
