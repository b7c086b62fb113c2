package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ptcfleet/ptc/pkg/messages"
)

// maxConfigBytes bounds the configuration file.
const maxConfigBytes = 1 << 20

// Config is the bridge's configuration file (YAML 1.2 or JSON): the MCP
// servers to bridge. String values may name environment variables as
// ${NAME}; an unset one is an error naming it, so a token never silently
// becomes empty.
type Config struct {
	// Servers are the MCP servers, each served as one fleet tool service.
	Servers []ServerConfig `yaml:"servers"`
}

// ServerConfig describes one MCP server. Exactly one of Command (stdio:
// the bridge starts the process) and URL (Streamable HTTP) is set.
type ServerConfig struct {
	// Name is the fleet tool service name: its tools are served on
	// tool.<name>.<tool>. Letters, digits, '-' and '_'.
	Name string `yaml:"name"`
	// Description describes the service in discovery.
	Description string `yaml:"description"`
	// Command is the program and its arguments (stdio transport).
	Command []string `yaml:"command"`
	// Env adds variables to the command's environment (the bridge's own
	// environment is not passed on, except PATH and HOME).
	Env map[string]string `yaml:"env"`
	// Dir is the command's working directory.
	Dir string `yaml:"dir"`
	// URL is the Streamable HTTP endpoint.
	URL string `yaml:"url"`
	// Headers are sent with every HTTP request (Authorization, ...).
	Headers map[string]string `yaml:"headers"`
	// Tools is the allow-list: only these tools are served, under their
	// As names when given. Empty serves every tool the server lists under
	// its own name (tools whose names are not valid fleet names are then
	// skipped with a warning).
	Tools []ToolRule `yaml:"tools"`
	// CallTimeout bounds one call when the fleet request carries no
	// timeout. Default 30s.
	CallTimeout time.Duration `yaml:"call_timeout"`
	// MaxConcurrent bounds the calls sent to the server at once. Default 16.
	MaxConcurrent int `yaml:"max_concurrent"`
}

// ToolRule exposes one MCP tool, optionally under another name.
type ToolRule struct {
	// Name is the tool's name on the MCP server.
	Name string `yaml:"name"`
	// As is the fleet tool name; empty means Name.
	As string `yaml:"as"`
}

// exposed returns the fleet name of the rule's tool.
func (r ToolRule) exposed() string {
	if r.As != "" {
		return r.As
	}
	return r.Name
}

// LoadConfig reads and checks a configuration file, expanding ${NAME}
// with getenv.
func LoadConfig(path string, getenv func(string) string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxConfigBytes+1)); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	if buf.Len() > maxConfigBytes {
		return nil, fmt.Errorf("config %s: larger than %d bytes", path, maxConfigBytes)
	}
	c, err := ParseConfig(buf.Bytes(), getenv)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes and checks a configuration, expanding ${NAME} with
// getenv. Unknown fields are errors.
func ParseConfig(data []byte, getenv func(string) string) (*Config, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if err := c.expand(getenv); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

func (c *Config) expand(getenv func(string) string) error {
	var missing []string
	exp := func(path, s string) string {
		return os.Expand(s, func(name string) string {
			v := getenv(name)
			if v == "" {
				missing = append(missing, fmt.Sprintf("%s: ${%s} is not set", path, name))
			}
			return v
		})
	}
	for i := range c.Servers {
		s := &c.Servers[i]
		p := fmt.Sprintf("servers[%d]", i)
		for j := range s.Command {
			s.Command[j] = exp(fmt.Sprintf("%s.command[%d]", p, j), s.Command[j])
		}
		s.URL = exp(p+".url", s.URL)
		s.Dir = exp(p+".dir", s.Dir)
		for _, k := range sortedKeys(s.Env) {
			s.Env[k] = exp(p+".env."+k, s.Env[k])
		}
		for _, k := range sortedKeys(s.Headers) {
			s.Headers[k] = exp(p+".headers."+k, s.Headers[k])
		}
	}
	if len(missing) > 0 {
		return errors.New(strings.Join(missing, "; "))
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Validate checks the configuration; errors name the field.
func (c *Config) Validate() error {
	if len(c.Servers) == 0 {
		return errors.New("servers: none configured")
	}
	names := map[string]bool{}
	for i, s := range c.Servers {
		p := fmt.Sprintf("servers[%d]", i)
		if !messages.ValidName(s.Name) {
			return fmt.Errorf("%s.name: %q is not a valid service name (letters, digits, '-', '_')", p, s.Name)
		}
		if names[s.Name] {
			return fmt.Errorf("%s.name: %q configured twice", p, s.Name)
		}
		names[s.Name] = true
		switch {
		case len(s.Command) > 0 && s.URL != "":
			return fmt.Errorf("%s: command and url are both set; pick one transport", p)
		case len(s.Command) == 0 && s.URL == "":
			return fmt.Errorf("%s: set command (stdio) or url (Streamable HTTP)", p)
		case len(s.Command) > 0 && s.Command[0] == "":
			return fmt.Errorf("%s.command[0]: empty program", p)
		case s.URL != "" && !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://"):
			return fmt.Errorf("%s.url: %q is not an http(s) URL", p, s.URL)
		case len(s.Headers) > 0 && s.URL == "":
			return fmt.Errorf("%s.headers: only for url servers", p)
		case s.CallTimeout < 0 || s.MaxConcurrent < 0:
			return fmt.Errorf("%s: negative call_timeout or max_concurrent", p)
		}
		exposed := map[string]bool{}
		for j, r := range s.Tools {
			q := fmt.Sprintf("%s.tools[%d]", p, j)
			if r.Name == "" {
				return fmt.Errorf("%s.name: empty", q)
			}
			n := r.exposed()
			if !messages.ValidName(n) || n == "return" || n == "fail" {
				return fmt.Errorf("%s: %q is not a valid fleet tool name (letters, digits, '-', '_'; not return or fail); rename it with as", q, n)
			}
			if exposed[n] {
				return fmt.Errorf("%s: tool name %q exposed twice", q, n)
			}
			exposed[n] = true
		}
	}
	return nil
}
