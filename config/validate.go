package config

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

func (c *Config) fail(key, msg, hint string) error {
	return &Error{Key: key, Origin: c.origins[key], Msg: msg, Hint: hint}
}

func missing(key, hint string) error {
	return &Error{Key: key, Msg: fmt.Sprintf("Missing required configuration %q which has no default value.", key), Hint: hint}
}

func listenerNames(ls []Listener) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.Name)
	}
	return strings.Join(s, ",")
}

// validate fills the typed fields and runs KafkaConfig's cross-key checks (KRaft
// mode only), in Kafka's order where it matters, with Kafka's messages.
func (c *Config) validate() error {
	// process.roles and node.id are required in KRaft mode.
	if !c.IsSet("process.roles") {
		return missing("process.roles", "Set process.roles=broker,controller for a combined node (or broker / controller), e.g. KAFKA_PROCESS_ROLES=broker,controller")
	}
	for _, r := range c.List("process.roles") {
		switch r {
		case "broker":
			c.ProcessRoles.Broker = true
		case "controller":
			c.ProcessRoles.Controller = true
		}
	}
	if !c.IsSet("node.id") {
		return missing("node.id", "Set node.id to this node's id, e.g. node.id=1 (KAFKA_NODE_ID=1)")
	}
	c.NodeID = c.Int("node.id")
	if c.IsSet("broker.id") && c.Int("broker.id") != c.NodeID {
		return c.fail("broker.id", "`node.id` and `broker.id` must be set to the same value. `broker.id` is deprecated, please use `node.id` instead.", "Remove broker.id")
	}
	if !c.IsSet("controller.listener.names") {
		return missing("controller.listener.names", "Set controller.listener.names to the name of the controller listener, e.g. controller.listener.names=CONTROLLER")
	}
	c.ControllerListenerNames = nil
	isController := map[string]bool{}
	for _, n := range c.List("controller.listener.names") {
		n = strings.ToUpper(n)
		c.ControllerListenerNames = append(c.ControllerListenerNames, n)
		isController[n] = true
	}

	// listener.security.protocol.map; when it is not set explicitly, controller
	// listeners default to the protocol of the same name, else PLAINTEXT.
	pm, err := parseProtocolMap("listener.security.protocol.map", c.String("listener.security.protocol.map"))
	if err != nil {
		return c.fail("listener.security.protocol.map", err.Error(), "Entries are NAME:PROTOCOL with PROTOCOL one of "+strings.Join(securityProtocols, ", "))
	}
	if !c.IsSet("listener.security.protocol.map") {
		for _, n := range c.ControllerListenerNames {
			if _, ok := pm[n]; !ok {
				if isSecurityProtocol(n) {
					pm[n] = n
				} else {
					pm[n] = "PLAINTEXT"
				}
			}
		}
	}
	c.ListenerSecurityProtocols = pm

	c.Listeners, err = parseListeners("listeners", c.List("listeners"), pm, true)
	if err != nil {
		return c.fail("listeners", err.Error(), "Each listener is NAME://host:port with NAME mapped in listener.security.protocol.map")
	}
	var advertised []Listener
	if c.IsSet("advertised.listeners") {
		advertised, err = parseListeners("advertised.listeners", c.List("advertised.listeners"), pm, false)
		if err != nil {
			return c.fail("advertised.listeners", err.Error(), "Each listener is NAME://host:port with NAME mapped in listener.security.protocol.map")
		}
	} else {
		advertised = c.Listeners
	}

	// Quorum.
	c.Voters, _ = parseVoters("controller.quorum.voters", c.List("controller.quorum.voters"))
	c.QuorumVoters = map[int32]HostPort{}
	for _, v := range c.Voters {
		c.QuorumVoters[v.ID] = v.HostPort
	}
	c.QuorumBootstrapServers = nil
	for _, s := range c.List("controller.quorum.bootstrap.servers") {
		hp, _ := parseHostPort(s)
		c.QuorumBootstrapServers = append(c.QuorumBootstrapServers, hp)
	}
	if len(c.Voters) == 0 && len(c.QuorumBootstrapServers) == 0 {
		return c.fail("controller.quorum.voters", "If using process.roles, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers or controller.quorum.voters must contain a parseable set of controllers.",
			"Set controller.quorum.voters, e.g. controller.quorum.voters=1@localhost:9093")
	}
	_, selfVoter := c.QuorumVoters[c.NodeID]

	listenerSet := map[string]bool{}
	for _, l := range c.Listeners {
		listenerSet[l.Name] = true
	}
	if c.ProcessRoles.Controller {
		if len(c.Voters) > 0 && !selfVoter {
			return c.fail("controller.quorum.voters", fmt.Sprintf("If process.roles contains the 'controller' role, the node id %d must be included in the set of voters controller.quorum.voters=%s", c.NodeID, voterIDSet(c.Voters)),
				fmt.Sprintf("Add %d@host:port to controller.quorum.voters or change node.id", c.NodeID))
		}
		for _, n := range c.ControllerListenerNames {
			if !listenerSet[n] {
				return c.fail("controller.listener.names", "controller.listener.names must only contain values appearing in the 'listeners' configuration when running the KRaft controller role",
					fmt.Sprintf("Add a %s://host:port listener to listeners or fix controller.listener.names (listeners are %s)", n, listenerNames(c.Listeners)))
			}
		}
		advNamed := map[string]Listener{}
		for _, l := range advertised {
			advNamed[l.Name] = l
		}
		c.AdvertisedControllerListeners = nil
		for _, n := range c.ControllerListenerNames {
			if l, ok := advNamed[n]; ok {
				c.AdvertisedControllerListeners = append(c.AdvertisedControllerListeners, l)
			} else if l, ok := c.Listener(n); ok {
				c.AdvertisedControllerListeners = append(c.AdvertisedControllerListeners, l)
			}
		}
		if len(c.AdvertisedControllerListeners) == 0 {
			return c.fail("controller.listener.names", "controller.listener.names must contain at least one value appearing in the 'listeners' configuration when running the KRaft controller role", "")
		}
		if !c.ProcessRoles.Broker {
			for _, l := range c.Listeners {
				if !isController[l.Name] {
					return c.fail("listeners", "The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller",
						fmt.Sprintf("Remove %s from listeners", l))
				}
			}
		}
	} else {
		if selfVoter {
			return c.fail("controller.quorum.voters", fmt.Sprintf("If process.roles contains just the 'broker' role, the node id %d must not be included in the set of voters controller.quorum.voters=%s", c.NodeID, voterIDSet(c.Voters)),
				"Give the broker a node.id that is not a controller's")
		}
		for _, n := range c.ControllerListenerNames {
			if listenerSet[n] {
				return c.fail("controller.listener.names", "controller.listener.names must not contain a value appearing in the 'listeners' configuration when running KRaft with just the broker role", "")
			}
			if _, ok := pm[n]; !ok {
				return c.fail("controller.listener.names", fmt.Sprintf("Controller listener with name %s defined in controller.listener.names not found in listener.security.protocol.map  (an explicit security mapping for each controller listener is required if listener.security.protocol.map is non-empty, or if there are security protocols other than PLAINTEXT in use)", n), "")
			}
		}
	}

	if c.ProcessRoles.Broker {
		if err := c.validateBrokerListeners(advertised, isController, listenerSet, pm); err != nil {
			return err
		}
		if err := c.validateInterBrokerSASL(); err != nil {
			return err
		}
	}
	for _, l := range append(append([]Listener(nil), c.AdvertisedListeners...), c.AdvertisedControllerListeners...) {
		if l.Host == "0.0.0.0" || l.Host == "::" {
			key := "advertised.listeners"
			hint := fmt.Sprintf("Set advertised.listeners to the address clients connect to, e.g. %s://localhost:%d", l.Name, l.Port)
			if !c.IsSet(key) {
				hint = "advertised.listeners is not set, so listeners are advertised. " + hint
			}
			return c.fail(key, "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.", hint)
		}
	}
	for _, n := range c.List("early.start.listeners") {
		if n = strings.ToUpper(n); !listenerSet[n] && !isController[n] {
			return c.fail("early.start.listeners", fmt.Sprintf("early.start.listeners contains listener %s, but this is not contained in listeners or controller.listener.names", n), "")
		}
	}

	// Log directories.
	dirsKey := "log.dirs"
	if !c.IsSet(dirsKey) {
		dirsKey = "log.dir"
	}
	c.LogDirs = nil
	for _, d := range c.List(dirsKey) {
		c.LogDirs = append(c.LogDirs, filepath.Clean(d))
	}
	if len(c.LogDirs) == 0 {
		return c.fail(dirsKey, "At least one log directory must be defined via log.dirs or log.dir.", "")
	}
	c.MetadataLogDir = c.LogDirs[0]
	if md := c.String("metadata.log.dir"); md != "" {
		c.MetadataLogDir = filepath.Clean(md)
	}
	return c.validateRanges()
}

func (c *Config) validateBrokerListeners(advertised []Listener, isController, listenerSet map[string]bool, pm map[string]string) error {
	c.AdvertisedListeners = nil
	for _, l := range advertised {
		if !isController[l.Name] {
			c.AdvertisedListeners = append(c.AdvertisedListeners, l)
		}
	}
	if len(c.AdvertisedListeners) == 0 {
		return c.fail("advertised.listeners", "There must be at least one broker advertised listener. Perhaps all listeners appear in controller.listener.names?",
			"Add a broker listener such as PLAINTEXT://:9092 to listeners")
	}
	if c.IsSet("inter.broker.listener.name") && c.IsSet("security.inter.broker.protocol") {
		return c.fail("inter.broker.listener.name", "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.", "Remove security.inter.broker.protocol")
	}
	ibl := strings.ToUpper(c.String("inter.broker.listener.name"))
	if ibl == "" && c.IsSet("inter.broker.listener.name") {
		return c.fail("inter.broker.listener.name", "The provided listener name is null or empty string", "Set it to a listener name such as PLAINTEXT, or remove it")
	}
	if ibl == "" {
		ibl = c.String("security.inter.broker.protocol")
	} else if _, ok := pm[ibl]; !ok {
		return c.fail("inter.broker.listener.name", fmt.Sprintf("Listener with name %s defined in inter.broker.listener.name not found in listener.security.protocol.map.", ibl), "")
	}
	c.InterBrokerListenerName = ibl
	found := false
	for _, l := range c.AdvertisedListeners {
		found = found || l.Name == ibl
	}
	if !found {
		return c.fail("inter.broker.listener.name", fmt.Sprintf("inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are %s", listenerNames(c.AdvertisedListeners)),
			"Set inter.broker.listener.name to one of them")
	}
	for _, l := range c.AdvertisedListeners {
		if !listenerSet[l.Name] {
			var names []Listener
			for _, x := range c.Listeners {
				if !isController[x.Name] {
					names = append(names, x)
				}
			}
			return c.fail("advertised.listeners", fmt.Sprintf("advertised.listeners listener names must be equal to or a subset of the ones defined in listeners. Found %s. The valid options based on the current configuration are %s",
				listenerNames(c.AdvertisedListeners), listenerNames(names)), "")
		}
	}
	return nil
}

func voterIDSet(vs []Voter) string {
	var s []string
	for _, v := range vs {
		s = append(s, fmt.Sprint(v.ID))
	}
	return "Set(" + strings.Join(s, ", ") + ")"
}

// validateRanges runs KafkaConfig.validateValues' numeric requirements.
func (c *Config) validateRanges() error {
	td := c.TopicDefaults()
	if v := parseInt64(td["segment.ms"]); v < 1 {
		return c.fail("log.roll.ms", "log.roll.ms must be greater than or equal to 1", "")
	}
	if v := parseInt64(td["segment.jitter.ms"]); v < 0 {
		return c.fail("log.roll.jitter.ms", "log.roll.jitter.ms must be greater than or equal to 0", "")
	}
	if v := parseInt64(td["retention.ms"]); v == 0 { // Kafka 4.4 takes any negative value as unlimited
		key := "log.retention.ms"
		for _, k := range []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"} {
			if c.IsSet(k) {
				key = k
				break
			}
		}
		return c.fail(key, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1", "")
	}
	if t := int64(c.Int("log.cleaner.threads")); t == 0 {
		return c.fail("log.cleaner.threads", "/ by zero", "Kafka 4.4 fails on log.cleaner.threads=0 (it divides log.cleaner.dedupe.buffer.size by it); use log.cleaner.enable=false instead")
	} else if c.Long("log.cleaner.dedupe.buffer.size")/t <= 1024*1024 {
		return c.fail("log.cleaner.dedupe.buffer.size", "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread.", "")
	}
	if c.Int("replica.fetch.wait.max.ms") > c.Int("replica.socket.timeout.ms") {
		return c.fail("replica.fetch.wait.max.ms", "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms to prevent unnecessary socket timeouts", "")
	}
	if int64(c.Int("replica.fetch.wait.max.ms")) > c.Long("replica.lag.time.max.ms") {
		return c.fail("replica.fetch.wait.max.ms", "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms to prevent frequent changes in ISR", "")
	}
	if q := c.Long("queued.max.request.bytes"); q > 0 && q < int64(c.Int("socket.request.max.bytes")) {
		return c.fail("queued.max.request.bytes", "queued.max.request.bytes must be larger or equal to socket.request.max.bytes", "")
	}
	if d, idle := int64(c.Int("connection.failed.authentication.delay.ms")), c.Long("connections.max.idle.ms"); idle >= 0 && d >= idle {
		return c.fail("connections.max.idle.ms", fmt.Sprintf("connection.failed.authentication.delay.ms=%d should always be less than connections.max.idle.ms=%d to prevent failed authentication responses from timing out", d, idle), "")
	}
	if c.Int("max.connections.per.ip") == 0 && c.String("max.connections.per.ip.overrides") == "" {
		return c.fail("max.connections.per.ip", "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.", "")
	}
	for _, e := range splitList(c.String("max.connections.per.ip.overrides")) {
		host, n, ok := strings.Cut(e, ":")
		if _, err := parseInt32(n); !ok || host == "" || err != nil {
			return c.fail("max.connections.per.ip.overrides", fmt.Sprintf("Error parsing configuration property 'max.connections.per.ip.overrides': entry %q is not host:count", e), "")
		}
	}
	for _, k := range []string{"offsets.topic.compression.codec", "share.coordinator.state.topic.compression.codec"} {
		if id := c.Int(k); id < 0 || id > 4 {
			return c.fail(k, fmt.Sprintf("Unknown compression type id: %d", id), "Use 0 (none), 1 (gzip), 2 (snappy), 3 (lz4) or 4 (zstd)")
		}
	}
	dirs := map[string]bool{}
	for _, d := range c.LogDirs {
		dirs[d] = true
	}
	var missingDirs []string
	for _, d := range c.List("cordoned.log.dirs") {
		if !dirs[filepath.Clean(d)] {
			missingDirs = append(missingDirs, d)
		}
	}
	if len(missingDirs) > 0 {
		return c.fail("cordoned.log.dirs", "All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : "+strings.Join(missingDirs, ","), "")
	}
	return c.validateRelations()
}

// relation is one of Kafka's "a must be <op> b" requirements between two INT keys.
type relation struct {
	a, op, b string // op: ">=", "<=", "<"
}

var relations = func() []relation {
	var rs []relation
	for _, g := range []string{"consumer", "share", "streams"} {
		p := "group." + g + "."
		rs = append(rs,
			relation{p + "max.heartbeat.interval.ms", ">=", p + "min.heartbeat.interval.ms"},
			relation{p + "heartbeat.interval.ms", ">=", p + "min.heartbeat.interval.ms"},
			relation{p + "heartbeat.interval.ms", "<=", p + "max.heartbeat.interval.ms"},
			relation{p + "max.session.timeout.ms", ">=", p + "min.session.timeout.ms"},
			relation{p + "session.timeout.ms", ">=", p + "min.session.timeout.ms"},
			relation{p + "session.timeout.ms", "<=", p + "max.session.timeout.ms"},
			relation{p + "heartbeat.interval.ms", "<", p + "session.timeout.ms"},
			relation{p + "assignment.interval.ms", ">=", p + "min.assignment.interval.ms"},
			relation{p + "assignment.interval.ms", "<=", p + "max.assignment.interval.ms"},
		)
	}
	return append(rs,
		relation{"group.share.max.share.sessions", ">=", "group.share.max.size"},
		relation{"group.streams.task.offset.interval.ms", ">=", "group.streams.min.task.offset.interval.ms"},
		relation{"group.streams.num.warmup.replicas", "<=", "group.streams.max.warmup.replicas"},
		relation{"group.streams.num.standby.replicas", "<=", "group.streams.max.standby.replicas"},
	)
}()

// validateRelations checks GroupCoordinatorConfig's requirements between keys.
func (c *Config) validateRelations() error {
	words := map[string]string{">=": "greater than or equal to", "<=": "less than or equal to", "<": "less than"}
	for _, r := range relations {
		a, b := c.Int(r.a), c.Int(r.b)
		ok := (r.op == ">=" && a >= b) || (r.op == "<=" && a <= b) || (r.op == "<" && a < b)
		if !ok {
			key := r.a
			if c.IsSet(r.b) && !c.IsSet(r.a) {
				key = r.b
			}
			return c.fail(key, fmt.Sprintf("%s must be %s %s", r.a, words[r.op], r.b), fmt.Sprintf("(%s=%d, %s=%d)", r.a, a, r.b, b))
		}
	}
	return nil
}

func parseInt32(s string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	return int32(n), err
}
