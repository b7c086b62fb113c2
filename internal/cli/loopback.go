package cli

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// LoopbackHost guards an HTTP server that may listen on a loopback
// address (the viewer, the MCP endpoint): a request received on a loopback
// address whose Host header names no loopback host is refused with 403.
// A web page of another site whose name an attacker points at 127.0.0.1
// (DNS rebinding) sends its own name as Host, so it can neither read nor
// drive the server; a browser or client on the machine sends localhost or
// the loopback address. Requests received on other addresses pass (the
// server was exposed on purpose; put authentication in front of it).
func LoopbackHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil &&
			IsLoopback(local.String()) && !IsLoopback(r.Host) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// IsLoopback reports whether addr ("host" or "host:port") names a
// loopback host: localhost, 127.0.0.0/8 or ::1.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
