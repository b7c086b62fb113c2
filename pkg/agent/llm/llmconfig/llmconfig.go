package llmconfig

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ptcfleet/ptc/pkg/agent/llm"
	"github.com/ptcfleet/ptc/pkg/agent/llm/anthropic"
	"github.com/ptcfleet/ptc/pkg/agent/llm/openai"
)

// EnvPrefix is the prefix of the environment variables RegistryFromEnv
// reads: PTC_MODEL_<NAME>=<spec>.
const EnvPrefix = "PTC_MODEL_"

// Provider presets.
const (
	OpenAI = "openai"
	// OpenAIResponses is OpenAI's Responses API, for the models chat
	// completions does not serve (the codex and -pro families).
	OpenAIResponses = "openai-responses"
	Anthropic       = "anthropic"
	OpenRouter      = "openrouter"
	Ollama          = "ollama"
)

// wire is the API a provider speaks.
type wire string

const (
	wireChat      wire = "OpenAI chat completions"
	wireResponses wire = "OpenAI Responses"
	wireMessages  wire = "Anthropic Messages"
)

// provider is everything llmconfig knows of a provider: adding one is one
// entry of providers.
type provider struct {
	baseURL string
	keyEnv  string
	needKey bool // on the default base URL
	wire    wire
	// appends is what the client appends to the base URL; a base URL
	// ending with it would be mangled.
	appends string
	// params are the spec parameters the provider takes besides key_env
	// and header.NAME.
	params []string
	// build makes the client of s with its base URL and key.
	build func(s Spec, base string, key llm.Secret, hc *http.Client) (llm.Model, error)
}

func buildOpenAI(s Spec, base string, key llm.Secret, hc *http.Client) (llm.Model, error) {
	return openai.New(openai.Config{Model: s.Model, BaseURL: base, APIKey: key, Provider: s.Provider,
		Headers: s.Headers, HTTPClient: hc, NoStreamUsage: s.NoStreamUsage, Stream: !s.NoStream})
}

func buildResponses(s Spec, base string, key llm.Secret, hc *http.Client) (llm.Model, error) {
	return openai.NewResponses(openai.Config{Model: s.Model, BaseURL: base, APIKey: key, Provider: s.Provider,
		Headers: s.Headers, HTTPClient: hc, Stream: !s.NoStream})
}

func buildAnthropic(s Spec, base string, key llm.Secret, hc *http.Client) (llm.Model, error) {
	return anthropic.New(anthropic.Config{Model: s.Model, BaseURL: base, APIKey: key, Version: s.Version,
		MaxTokens: s.MaxTokens, Headers: s.Headers, HTTPClient: hc, Stream: !s.NoStream})
}

var providers = map[string]provider{
	OpenAI: {baseURL: openai.DefaultBaseURL, keyEnv: "OPENAI_API_KEY", needKey: true, wire: wireChat,
		appends: "/chat/completions", params: []string{"stream", "stream_usage"}, build: buildOpenAI},
	OpenAIResponses: {baseURL: openai.DefaultBaseURL, keyEnv: "OPENAI_API_KEY", needKey: true, wire: wireResponses,
		appends: "/responses", params: []string{"stream"}, build: buildResponses},
	Anthropic: {baseURL: anthropic.DefaultBaseURL, keyEnv: "ANTHROPIC_API_KEY", needKey: true, wire: wireMessages,
		appends: "/v1/messages", params: []string{"max_tokens", "stream", "version"}, build: buildAnthropic},
	OpenRouter: {baseURL: "https://openrouter.ai/api/v1", keyEnv: "OPENROUTER_API_KEY", needKey: true, wire: wireChat,
		appends: "/chat/completions", params: []string{"stream", "stream_usage"}, build: buildOpenAI},
	Ollama: {baseURL: "http://localhost:11434/v1", wire: wireChat,
		appends: "/chat/completions", params: []string{"stream", "stream_usage"}, build: buildOpenAI},
}

// knownHosts are hosted APIs by the wire they speak, so that a spec
// pointing a provider at another provider's endpoint is refused.
var knownHosts = map[string][]wire{
	"api.openai.com":    {wireChat, wireResponses},
	"openrouter.ai":     {wireChat},
	"api.anthropic.com": {wireMessages},
}

// acceptedForms is the syntax shown by spec errors.
const acceptedForms = `accepted forms: "provider:model", "provider:model@https://host[:port][/path]", ` +
	`each optionally followed by ";key_env=VAR", ";header.NAME=VALUE" or a provider parameter ` +
	`(e.g. "openai:gpt-4.1-mini", "openai:qwen2.5-coder@http://localhost:8000/v1", "anthropic:claude-sonnet-4-5;max_tokens=8192")`

func providerNames() string {
	names := slices.Sorted(maps.Keys(providers))
	return strings.Join(names, ", ")
}

// priceParams are the spec parameters every provider takes for its
// prices, in US dollars per million tokens, and the field each sets.
var priceParams = map[string]func(*llm.Prices) *float64{
	"price_in":          func(p *llm.Prices) *float64 { return &p.Input },
	"price_out":         func(p *llm.Prices) *float64 { return &p.Output },
	"price_cache_read":  func(p *llm.Prices) *float64 { return &p.CacheRead },
	"price_cache_write": func(p *llm.Prices) *float64 { return &p.CacheWrite },
}

// Spec is a parsed model spec. The zero value is not valid; use Parse.
type Spec struct {
	Provider string
	Model    string
	// BaseURL is the override given after '@' ("" for the preset's).
	BaseURL string
	// KeyEnv names the variable holding the key ("" for the preset's).
	KeyEnv string
	// MaxTokens is Anthropic's default max_tokens (0 for the client's).
	MaxTokens int
	// Version is the anthropic-version header ("" for the client's).
	Version string
	// Prices, when set, make the model estimate each answer's cost
	// (llm.Usage.CostUSD; parameters price_in, price_out,
	// price_cache_read, price_cache_write).
	Prices llm.Prices
	// NoStreamUsage drops stream_options.include_usage (OpenAI-compatible).
	NoStreamUsage bool
	// NoStream makes the model answer in one body instead of a stream
	// (stream=false; see openai.Config.Stream).
	NoStream bool
	// Headers are extra request headers.
	Headers map[string]string
}

// String returns the spec in canonical form with header values redacted,
// safe for logs.
func (s Spec) String() string { return s.format(true) }

func (s Spec) format(redact bool) string {
	var b strings.Builder
	b.WriteString(s.Provider)
	b.WriteByte(':')
	b.WriteString(s.Model)
	if s.BaseURL != "" {
		b.WriteByte('@')
		b.WriteString(s.BaseURL)
	}
	if s.KeyEnv != "" {
		b.WriteString(";key_env=" + s.KeyEnv)
	}
	if s.MaxTokens != 0 {
		b.WriteString(";max_tokens=" + strconv.Itoa(s.MaxTokens))
	}
	if s.Version != "" {
		b.WriteString(";version=" + s.Version)
	}
	if s.NoStreamUsage {
		b.WriteString(";stream_usage=false")
	}
	if s.NoStream {
		b.WriteString(";stream=false")
	}
	for _, k := range slices.Sorted(maps.Keys(priceParams)) {
		if f := *priceParams[k](&s.Prices); f != 0 {
			b.WriteString(";" + k + "=" + strconv.FormatFloat(f, 'f', -1, 64))
		}
	}
	names := make([]string, 0, len(s.Headers))
	for k := range s.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := s.Headers[k]
		if redact {
			v = "[redacted]"
		}
		b.WriteString(";header." + k + "=" + v)
	}
	return b.String()
}

func specErr(spec, format string, args ...any) error {
	return &llm.Error{Kind: llm.KindConfig, Message: fmt.Sprintf("model spec %q: ", spec) + fmt.Sprintf(format, args...)}
}

// Parse parses a spec string (see the package documentation). Errors are
// *llm.Error of KindConfig naming the problem. Parse reads no environment.
func Parse(spec string) (Spec, error) {
	shown := spec // specs carry no keys; header values are cut from messages below
	if i := strings.Index(shown, ";"); i >= 0 {
		shown = shown[:i] + ";..."
	}
	provider, rest, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok {
		return Spec{}, specErr(shown, `want "provider:model", e.g. "openai:gpt-4.1-mini"`)
	}
	provider = strings.ToLower(strings.TrimSpace(provider))
	p, ok := providers[provider]
	if !ok {
		return Spec{}, specErr(shown, "unknown provider %q (want one of %s)", provider, providerNames())
	}
	s := Spec{Provider: provider}
	main, params, _ := strings.Cut(rest, ";")
	if i := indexURL(main); i >= 0 {
		s.Model, s.BaseURL = main[:i], main[i+1:]
		if err := checkBaseURL(provider, p, s.BaseURL); err != nil {
			return Spec{}, specErr(shown, "%v; %s", err, acceptedForms)
		}
	} else {
		s.Model = main
		if at := strings.LastIndexByte(main, '@'); at >= 0 && looksLikeHost(main[at+1:]) {
			return Spec{}, specErr(shown, "base URL %q has no scheme: write %s:%s@http://%s (or https://); %s",
				main[at+1:], provider, main[:at], main[at+1:], acceptedForms)
		}
	}
	if strings.TrimSpace(s.Model) != s.Model || s.Model == "" {
		return Spec{}, specErr(shown, "model name is empty or has surrounding spaces")
	}
	if params == "" {
		return s, nil
	}
	for i, param := range strings.Split(params, ";") {
		key, val, ok := strings.Cut(param, "=")
		if !ok || key == "" {
			return Spec{}, specErr(shown, "parameter %d: want key=value", i+1)
		}
		_, isPrice := priceParams[key]
		if !strings.HasPrefix(key, "header.") && key != "key_env" && !isPrice && !slices.Contains(p.params, key) {
			known := append([]string{"key_env", "header.NAME", "price_in", "price_out", "price_cache_read", "price_cache_write"}, p.params...)
			hint := ""
			if key == "max_tokens" || key == "temperature" {
				hint = "; request options go in the agent's llm_opts (OpenAI: max_completion_tokens)"
			}
			return Spec{}, specErr(shown, "parameter %q does not apply to %s (it takes %s)%s", key, provider, strings.Join(known, ", "), hint)
		}
		switch {
		case key == "key_env":
			if !validEnvName(val) {
				return Spec{}, specErr(shown, "key_env %q is not an environment variable name", val)
			}
			s.KeyEnv = val
		case isPrice:
			f, err := strconv.ParseFloat(val, 64)
			if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return Spec{}, specErr(shown, "%s %q is not a price (US dollars per million tokens, e.g. 3 or 0.30)", key, val)
			}
			*priceParams[key](&s.Prices) = f
		case key == "max_tokens":
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 {
				return Spec{}, specErr(shown, "max_tokens %q is not a positive integer", val)
			}
			s.MaxTokens = n
		case key == "version":
			if val == "" {
				return Spec{}, specErr(shown, "version must not be empty")
			}
			s.Version = val
		case key == "stream":
			if val != "false" && val != "true" {
				return Spec{}, specErr(shown, "stream must be true or false")
			}
			s.NoStream = val == "false"
		case key == "stream_usage":
			if val != "false" && val != "true" {
				return Spec{}, specErr(shown, "stream_usage must be true or false")
			}
			s.NoStreamUsage = val == "false"
		case strings.HasPrefix(key, "header."):
			name := strings.TrimPrefix(key, "header.")
			if !validHeaderName(name) {
				return Spec{}, specErr(shown, "header name %q is not valid", name)
			}
			if strings.ContainsAny(val, "\r\n\x00") {
				return Spec{}, specErr(shown, "header %s: value contains control characters", name)
			}
			if s.Headers == nil {
				s.Headers = map[string]string{}
			}
			s.Headers[name] = val
		default:
			return Spec{}, specErr(shown, "unknown parameter %q (want key_env, max_tokens, version, stream_usage or header.NAME)", key)
		}
	}
	return s, nil
}

// checkBaseURL refuses base URLs the client would mangle or that belong to
// another provider, saying what to write instead.
func checkBaseURL(name string, p provider, base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("base URL %q is not an absolute http or https URL", base)
	}
	if ws, ok := knownHosts[strings.ToLower(u.Hostname())]; ok && !slices.Contains(ws, p.wire) {
		return fmt.Errorf("base URL %q is an endpoint of the %s API, but %s speaks the %s API", base, ws[0], name, p.wire)
	}
	switch {
	case strings.Contains(u.Path, "/deployments/"):
		return fmt.Errorf("base URL %q is an Azure OpenAI deployment URL; the client appends %s to the base URL and "+
			"names the model in the body, so give the resource's OpenAI-compatible v1 endpoint instead "+
			"(openai:DEPLOYMENT@https://RESOURCE.openai.azure.com/openai/v1;key_env=VAR)", base, p.appends)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("base URL %q has a query or fragment; the client appends %s to it, so give the API root only", base, p.appends)
	case strings.HasSuffix(strings.TrimRight(u.Path, "/"), p.appends):
		return fmt.Errorf("base URL %q already ends with %s, which the client appends; give %s", base, p.appends,
			strings.TrimSuffix(strings.TrimRight(base, "/"), p.appends))
	case p.wire == wireMessages && strings.HasSuffix(strings.TrimRight(u.Path, "/"), "/v1"):
		return fmt.Errorf("base URL %q ends with /v1; the client appends %s, so give %s", base, p.appends,
			strings.TrimSuffix(strings.TrimRight(base, "/"), "/v1"))
	}
	return nil
}

// looksLikeHost reports whether s (what follows '@' without a scheme) is
// a host rather than part of a model name such as "model@20240620".
func looksLikeHost(s string) bool {
	return strings.HasPrefix(s, "localhost") || strings.ContainsAny(s, "/.") ||
		strings.Contains(s, ":") && !strings.HasPrefix(s, ":")
}

// indexURL returns the index of the '@' starting "@http://" or
// "@https://", or -1.
func indexURL(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] == '@' && (strings.HasPrefix(s[i+1:], "http://") || strings.HasPrefix(s[i+1:], "https://")) {
			return i
		}
	}
	return -1
}

func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// Options are the environment of NewModel and RegistryFromEnv.
type Options struct {
	// Getenv reads environment variables (keys). Pass os.Getenv from main;
	// nil means an empty environment (RegistryFromEnv falls back to its
	// environ list).
	Getenv func(string) string
	// HTTPClient is used by every model built (default: each model gets
	// one with dial, TLS and response header timeouts).
	HTTPClient *http.Client
}

func (o Options) getenv(name string) string {
	if o.Getenv == nil {
		return ""
	}
	return o.Getenv(name)
}

// Build turns a parsed spec into a model, reading its key through
// o.Getenv.
func (s Spec) Build(o Options) (llm.Model, error) {
	p, ok := providers[s.Provider]
	if !ok {
		return nil, specErr(s.String(), "unknown provider %q (want one of %s)", s.Provider, providerNames())
	}
	// A key goes to the preset's own base URL, or to an overridden one only
	// when the spec names its variable: a URL override must not receive
	// the hosted provider's key (over plain http, perhaps) by default.
	keyEnv := s.KeyEnv
	if keyEnv == "" && s.BaseURL == "" {
		keyEnv = p.keyEnv
	}
	var key llm.Secret
	if keyEnv != "" {
		key = llm.Secret(o.getenv(keyEnv))
	}
	if key == "" && (s.KeyEnv != "" || (p.needKey && s.BaseURL == "")) {
		return nil, specErr(s.Provider+":"+s.Model, "environment variable %s is not set", keyEnv)
	}
	base := s.BaseURL
	if base == "" {
		base = p.baseURL
	}
	m, err := p.build(s, base, key, o.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("model spec %q: %w", s.String(), err)
	}
	if !s.Prices.IsZero() {
		m = llm.WithPrices(m, s.Prices)
	}
	return m, nil
}

// NewModel parses spec and builds the model.
func NewModel(spec string, o Options) (llm.Model, error) {
	s, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	return s.Build(o)
}

// RegistryFromEnv builds a registry from the PTC_MODEL_<NAME>=<spec>
// entries of environ (as os.Environ returns it); NAME lower-cased is the
// registry key (PTC_MODEL_HAIKU → "haiku"). Keys are read with o.Getenv,
// or from environ itself when o.Getenv is nil. Every bad entry is reported
// (errors joined), each naming its variable. With no entries the registry is
// empty, not nil.
func RegistryFromEnv(environ []string, o Options) (llm.Registry, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	if o.Getenv == nil {
		o.Getenv = func(k string) string { return env[k] }
	}
	names := make([]string, 0)
	for k := range env {
		if strings.HasPrefix(k, EnvPrefix) {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	reg := llm.Registry{}
	var errs []error
	for _, k := range names {
		name := strings.ToLower(strings.TrimPrefix(k, EnvPrefix))
		if name == "" {
			errs = append(errs, fmt.Errorf("%s: empty model name after %s", k, EnvPrefix))
			continue
		}
		if _, dup := reg[name]; dup {
			errs = append(errs, fmt.Errorf("%s: model name %q is defined twice (names are case-insensitive)", k, name))
			continue
		}
		m, err := NewModel(env[k], o)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			continue
		}
		reg[name] = m
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return reg, nil
}
