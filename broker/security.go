package broker

// Security wiring (package security does the work): each listener's TLS and
// SASL from its listener.security.protocol.map protocol and its ssl.* /
// sasl.* keys (listener.name.<l>. overrides), SCRAM credentials from the
// metadata image, the TLS and SASL of this node's own connections (raft and
// the controller channel on the first controller listener with
// sasl.mechanism.controller.protocol; inter-broker clients and replica
// fetchers on inter.broker.listener.name with
// sasl.mechanism.inter.broker.protocol), and dynamic keystore reloads when
// a listener's ssl.* broker configs change in the image (kafka-configs.sh
// --alter --entity-type brokers).

import (
	"fmt"
	"maps"
	"os"
	"regexp"
	"strings"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/security"
)

// nodeProps is security.Props over the node's config with the image's
// dynamic broker configs on top (per-broker over cluster default over
// static over Kafka's default, as DynamicBrokerConfig orders them).
type nodeProps struct {
	cfg *config.Config
	dyn map[string]string
}

func (p nodeProps) Get(key string) (string, bool) {
	if v, ok := p.dyn[key]; ok {
		return v, true
	}
	v, _, ok := p.cfg.Get(key)
	return v, ok
}

func dynamicBrokerConfigs(img *metadatacache.Image, nodeID int32) map[string]string {
	if img == nil {
		return nil
	}
	out := img.DefaultBrokerConfig()
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, img.BrokerConfig(nodeID))
	return out
}

func (n *Node) props() nodeProps {
	var img *metadatacache.Image
	if n.cache != nil {
		img = n.cache.Image()
	}
	return nodeProps{cfg: n.cfg, dyn: dynamicBrokerConfigs(img, n.cfg.NodeID)}
}

var jaasOptRE = regexp.MustCompile(`-Djava\.security\.auth\.login\.config=("[^"]*"|\S+)`)

// loadJaasFile reads the JAAS file KAFKA_OPTS names with
// -Djava.security.auth.login.config (how Kafka and its docker image take a
// JAAS file); none is fine.
func loadJaasFile(kafkaOpts string) (map[string][]security.LoginModule, error) {
	m := jaasOptRE.FindStringSubmatch(kafkaOpts)
	if m == nil {
		return nil, nil
	}
	path := strings.Trim(m[1], `"`)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("java.security.auth.login.config: %w", err)
	}
	sections, err := security.ParseJaasFile(string(data))
	if err != nil {
		return nil, fmt.Errorf("java.security.auth.login.config %s: %w", path, err)
	}
	return sections, nil
}

// scramLookup finds SCRAM credentials in the current image.
func (n *Node) scramLookup(user string, mechanism int8) (security.ScramCredential, bool) {
	c, ok := n.cache.Image().ScramCredential(user, mechanism)
	if !ok {
		return security.ScramCredential{}, false
	}
	return security.ScramCredential{Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations}, true
}

// listenerSecurity builds a listener's server-side security.
func (n *Node) listenerSecurity(l config.Listener) (*security.Listener, error) {
	return security.NewListener(security.ListenerConfig{
		Name: l.Name, SecurityProtocol: l.SecurityProtocol, Props: n.props(),
		Scram: n.scramLookup, JaasFile: n.jaas, Logger: n.logger.Named("security"),
	})
}

// clientOptions are the TLS and SASL of this node's connections to the
// listener named name on other nodes, with mechanismKey's SASL mechanism.
func (n *Node) clientOptions(name, mechanismKey string) (protocol.ClientOptions, error) {
	proto := n.cfg.ListenerSecurityProtocols[strings.ToUpper(name)]
	if proto == "" {
		proto = "PLAINTEXT"
	}
	p := n.props()
	mech, _ := p.Get(mechanismKey)
	tc, mechanism, err := security.ClientOptions(security.ClientConfig{Listener: name, SecurityProtocol: proto,
		Mechanism: mech, Props: p, JaasFile: n.jaas})
	if err != nil {
		return protocol.ClientOptions{}, fmt.Errorf("the node's connections to listener %s (%s): %w", name, proto, err)
	}
	return protocol.ClientOptions{TLS: tc, SASL: mechanism}, nil
}

// reloadListenerTLS applies changed dynamic ssl.* configs of this node to
// the TLS listeners (Kafka's DynamicListenerConfig reconfiguring SslFactory):
// new connections get the new keystore; a keystore that fails to load or
// changes the certificate's subject is refused and logged, and the old one
// stays.
func (n *Node) reloadListenerTLS(old, cur *metadatacache.Image) {
	if old != nil && maps.Equal(dynamicBrokerConfigs(old, n.cfg.NodeID), dynamicBrokerConfigs(cur, n.cfg.NodeID)) {
		return
	}
	p := nodeProps{cfg: n.cfg, dyn: dynamicBrokerConfigs(cur, n.cfg.NodeID)}
	for name, ls := range n.listenerSec {
		changed, err := ls.Reload(p)
		switch {
		case err != nil:
			n.logger.Error("dynamic SSL reconfiguration refused; the listener keeps its keystore", zap.String("listener", name), zap.Error(err))
		case changed:
			n.logger.Info("listener keystore reloaded: new connections use the new certificate", zap.String("listener", name))
		}
	}
}
