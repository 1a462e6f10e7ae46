package config

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// HostPort is a host and port. Host "" means every interface when listening.
type HostPort struct {
	Host string
	Port int32
}

// String joins host and port, bracketing IPv6 hosts.
func (h HostPort) String() string { return net.JoinHostPort(h.Host, strconv.Itoa(int(h.Port))) }

// Voter is one entry of controller.quorum.voters.
type Voter struct {
	ID int32
	HostPort
}

// Listener is one entry of listeners or advertised.listeners.
type Listener struct {
	Name             string // upper-cased, as Kafka's ListenerName.normalised
	Host             string // "" = all interfaces (listeners) / unset (advertised)
	Port             int32
	SecurityProtocol string // PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL
}

// Addr is host:port for net.Listen / clients.
func (l Listener) Addr() string { return net.JoinHostPort(l.Host, strconv.Itoa(int(l.Port))) }

// String is Kafka's form NAME://host:port.
func (l Listener) String() string { return l.Name + "://" + l.Addr() }

// SecurityProtocols are Kafka's SecurityProtocol names.
var securityProtocols = []string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}

func isSecurityProtocol(s string) bool {
	for _, p := range securityProtocols {
		if p == s {
			return true
		}
	}
	return false
}

// parseHostPort parses host:port, host may be [ipv6] or empty.
func parseHostPort(s string) (HostPort, error) {
	s = strings.TrimSpace(s)
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return HostPort{}, fmt.Errorf("missing port in %q", s)
	}
	host, ps := s[:i], s[i+1:]
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	p, err := strconv.ParseUint(ps, 10, 16)
	if err != nil || ps == "" {
		return HostPort{}, fmt.Errorf("invalid port in %q", s)
	}
	return HostPort{Host: host, Port: int32(p)}, nil
}

// parseVoters parses controller.quorum.voters with Kafka's messages.
func parseVoters(name string, items []string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	for _, it := range items {
		id, addr, ok := strings.Cut(it, "@")
		if !ok {
			return nil, &ValueError{Key: name, Msg: "Invalid configuration value for " + name + ". Each entry should be in the form `{id}@{host}:{port}`."}
		}
		n, err := strconv.ParseInt(id, 10, 32)
		if err != nil {
			return nil, &ValueError{Key: name, Msg: "Failed to parse voter ID as an integer from " + id}
		}
		hp, err := parseHostPort(addr)
		if err != nil || hp.Host == "" {
			return nil, &ValueError{Key: name, Msg: "Failed to parse host name from entry " + it + " for the configuration " + name + ". Each entry should be in the form `{id}@{host}:{port}`."}
		}
		if seen[int32(n)] {
			return nil, &ValueError{Key: name, Msg: fmt.Sprintf("Duplicate voter id %d in %s", n, name)}
		}
		seen[int32(n)] = true
		out = append(out, Voter{ID: int32(n), HostPort: hp})
	}
	return out, nil
}

var endpointRE = regexp.MustCompile(`^(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)$`)

// parseProtocolMap parses listener.security.protocol.map (NAME:PROTOCOL,...).
func parseProtocolMap(name, value string) (map[string]string, error) {
	m := map[string]string{}
	for _, it := range splitList(value) {
		l, p, ok := strings.Cut(it, ":")
		if !ok {
			return nil, &ValueError{Key: name, Msg: fmt.Sprintf("Error parsing configuration property '%s': entry %q is not NAME:PROTOCOL", name, it)}
		}
		p = strings.ToUpper(strings.TrimSpace(p))
		if !isSecurityProtocol(p) {
			return nil, &ValueError{Key: name, Msg: fmt.Sprintf("Invalid security protocol `%s` defined in %s", p, name)}
		}
		m[strings.ToUpper(strings.TrimSpace(l))] = p
	}
	return m, nil
}

// parseListeners parses listeners / advertised.listeners with Kafka's messages
// (CoreUtils.listenerListToEndPoints).
func parseListeners(key string, items []string, protocols map[string]string, uniquePorts bool) ([]Listener, error) {
	wrap := func(msg string) error {
		return &ValueError{Key: key, Msg: fmt.Sprintf("Error creating broker listeners from '[%s]': %s", strings.Join(items, ", "), msg)}
	}
	var out []Listener
	names := map[string]bool{}
	ports := map[int32]bool{}
	for _, it := range items {
		m := endpointRE.FindStringSubmatch(it)
		if m == nil {
			return nil, wrap("Unable to parse " + it + " to a broker endpoint")
		}
		port, err := strconv.ParseInt(m[3], 10, 32)
		if err != nil || port < 0 || port > 65535 {
			return nil, wrap("Unable to parse " + it + " to a broker endpoint")
		}
		ln := strings.ToUpper(m[1])
		proto, ok := protocols[ln]
		if !ok {
			return nil, wrap("No security protocol defined for listener " + ln)
		}
		if names[ln] {
			return nil, wrap(fmt.Sprintf("Each listener must have a different name, listeners: [%s]", strings.Join(items, ", ")))
		}
		if uniquePorts && port != 0 && ports[int32(port)] {
			return nil, wrap(fmt.Sprintf("Each listener must have a different port, listeners: [%s]", strings.Join(items, ", ")))
		}
		names[ln], ports[int32(port)] = true, true
		out = append(out, Listener{Name: ln, Host: m[2], Port: int32(port), SecurityProtocol: proto})
	}
	return out, nil
}
