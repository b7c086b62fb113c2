package llmconfig

import (
	"errors"
	"fmt"
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
	OpenAI     = "openai"
	Anthropic  = "anthropic"
	OpenRouter = "openrouter"
	Ollama     = "ollama"
)

type preset struct {
	baseURL   string
	keyEnv    string
	needKey   bool // on the default base URL
	anthropic bool
}

var presets = map[string]preset{
	OpenAI:     {baseURL: openai.DefaultBaseURL, keyEnv: "OPENAI_API_KEY", needKey: true},
	Anthropic:  {baseURL: anthropic.DefaultBaseURL, keyEnv: "ANTHROPIC_API_KEY", needKey: true, anthropic: true},
	OpenRouter: {baseURL: "https://openrouter.ai/api/v1", keyEnv: "OPENROUTER_API_KEY", needKey: true},
	Ollama:     {baseURL: "http://localhost:11434/v1"},
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
	// NoStreamUsage drops stream_options.include_usage (OpenAI-compatible).
	NoStreamUsage bool
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
	if _, ok := presets[provider]; !ok {
		return Spec{}, specErr(shown, "unknown provider %q (want openai, anthropic, openrouter or ollama)", provider)
	}
	s := Spec{Provider: provider}
	main, params, _ := strings.Cut(rest, ";")
	if i := indexURL(main); i >= 0 {
		s.Model, s.BaseURL = main[:i], main[i+1:]
		u, err := url.Parse(s.BaseURL)
		if err != nil || u.Host == "" {
			return Spec{}, specErr(shown, "base URL %q is not an absolute http or https URL", s.BaseURL)
		}
	} else {
		s.Model = main
	}
	if strings.TrimSpace(s.Model) != s.Model || s.Model == "" {
		return Spec{}, specErr(shown, "model name is empty or has surrounding spaces")
	}
	if params == "" {
		return s, nil
	}
	for i, p := range strings.Split(params, ";") {
		key, val, ok := strings.Cut(p, "=")
		if !ok || key == "" {
			return Spec{}, specErr(shown, "parameter %d: want key=value", i+1)
		}
		switch {
		case key == "key_env":
			if !validEnvName(val) {
				return Spec{}, specErr(shown, "key_env %q is not an environment variable name", val)
			}
			s.KeyEnv = val
		case key == "max_tokens":
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 {
				return Spec{}, specErr(shown, "max_tokens %q is not a positive integer", val)
			}
			if provider != Anthropic {
				return Spec{}, specErr(shown, "max_tokens applies to anthropic only; pass it in llm_opts")
			}
			s.MaxTokens = n
		case key == "version":
			if provider != Anthropic || val == "" {
				return Spec{}, specErr(shown, "version applies to anthropic only and must not be empty")
			}
			s.Version = val
		case key == "stream_usage":
			if val != "false" && val != "true" {
				return Spec{}, specErr(shown, "stream_usage must be true or false")
			}
			if provider == Anthropic {
				return Spec{}, specErr(shown, "stream_usage applies to OpenAI-compatible providers only")
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
	// HTTPClient is used by every model built (default http.DefaultClient).
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
	p, ok := presets[s.Provider]
	if !ok {
		return nil, specErr(s.String(), "unknown provider %q", s.Provider)
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
	var (
		m   llm.Model
		err error
	)
	if p.anthropic {
		m, err = anthropic.New(anthropic.Config{Model: s.Model, BaseURL: base, APIKey: key, Version: s.Version,
			MaxTokens: s.MaxTokens, Headers: s.Headers, HTTPClient: o.HTTPClient})
	} else {
		m, err = openai.New(openai.Config{Model: s.Model, BaseURL: base, APIKey: key, Provider: s.Provider,
			Headers: s.Headers, HTTPClient: o.HTTPClient, NoStreamUsage: s.NoStreamUsage})
	}
	if err != nil {
		return nil, fmt.Errorf("model spec %q: %w", s.String(), err)
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
