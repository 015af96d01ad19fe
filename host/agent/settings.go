package agent

import (
	"github.com/ferryhq/ferry/host/config"
	"github.com/ferryhq/ferry/host/tools"
)

// Settings keys of the agent (`ferry config list` documents them).
const (
	SettingSystemPrompt        = "agent.system_prompt"
	SettingMaxToolCalls        = tools.SettingMaxToolCalls
	SettingMaxTokensPerRun     = "agent.max_tokens_per_run"
	SettingSubagentConcurrency = "agent.subagent_concurrency"
	SettingDiagnosticsDays     = "diagnostics.retention_days"
	SettingOnLengthLimit       = "agent.on_length_limit"
)

// Values of SettingOnLengthLimit.
const (
	LengthStop     = "stop"
	LengthContinue = "continue"
)

// maxContinuations bounds how often one run asks a model to go on after its
// length limit: an answer that never ends is a loop, not a long answer.
const maxContinuations = 3

func init() {
	for _, s := range []config.Setting{
		{Key: SettingSystemPrompt, Default: "",
			Description: "your own instructions, added to the agent's built-in system prompt on every run"},
		{Key: SettingMaxToolCalls, Default: "200", Validate: config.IntRange(0, 100000),
			Description: "tool calls one run may make before it must answer (0: no cap; the loop guard still pauses repeated calls)"},
		{Key: SettingMaxTokensPerRun, Default: "1000000", Validate: config.IntRange(0, 1000000000),
			Description: "tokens (prompt and answer, as the provider counts them, summed over the run's model calls) one run may use; once reached the run stops before asking the model again, and a new message goes on (0: no cap)"},
		{Key: SettingSubagentConcurrency, Default: "4", Validate: config.IntRange(1, 64),
			Description: "sub-agents (the agent tool) running at once in this host; more wait in a queue"},
		{Key: SettingOnLengthLimit, Default: LengthStop, Validate: config.OneOf(LengthStop, LengthContinue),
			Description: "when an answer is cut at the model's length limit: stop (the run fails, saying so, with the partial answer kept) or continue (the model is asked to go on where it stopped, up to 3 times); a tool call cut off is never run"},
		{Key: SettingDiagnosticsDays, Default: "14", Validate: config.IntRange(0, 36500),
			Description: "days the diagnostics records of model calls (the request as sent, the response) are kept; 0 keeps everything"},
	} {
		config.Register(s)
	}
}
