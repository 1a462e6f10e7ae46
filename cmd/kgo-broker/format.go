package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/controller"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
)

// formatOptions are kafka-storage.sh format's options.
type formatOptions struct {
	ClusterID          string
	IgnoreFormatted    bool
	ReleaseVersion     string
	Standalone         bool
	NoInitialControls  bool
	InitialControllers string
	// Features are the --feature name=level options (the last one of a name wins).
	Features map[string]int16
	// Scram are the --add-scram arguments (format_scram.go).
	Scram []string
}

// bootstrap is what a format finalizes: the metadata.version and the
// feature levels (controller.BootstrapFeatures), written into the zero
// checkpoint of a controller's metadata log dir, with the kraft.version and,
// for --standalone or --initial-controllers, the initial voters (KIP-853) in
// its header batch.
type bootstrap struct {
	MV           int16
	Features     []controller.Feature
	KRaftVersion int16
	Voters       *raft.VoterSet
	// Scram are the --add-scram users' credentials, after the features.
	Scram []*metadatacache.UserScramCredentialRecord
}

// records are the bootstrap records: the features, then the SCRAM users.
func (b bootstrap) records() []metadatacache.Record {
	recs := controller.BootstrapRecords(b.Features)
	for _, r := range b.Scram {
		recs = append(recs, r)
	}
	return recs
}

// defaultBootstrap is what the first-start format uses (a static quorum).
func defaultBootstrap() bootstrap {
	return bootstrap{MV: controller.DefaultMetadataVersion, Features: controller.DefaultBootstrapFeatures()}
}

// resolveBootstrap is Formatter's calculateEffectiveReleaseVersion and
// calculateEffectiveFeatureLevels for --release-version and --feature.
func resolveBootstrap(cfg *config.Config, o formatOptions) (bootstrap, error) {
	mv, err := controller.ResolveReleaseVersion(o.ReleaseVersion, o.Features)
	if err != nil {
		return bootstrap{}, &formatError{err.Error()}
	}
	given := make(map[string]int16, len(o.Features))
	for k, v := range o.Features {
		if k != metadatacache.MetadataVersionFeature {
			given[k] = v
		}
	}
	// Formatter.hasDynamicQuorum: controller.quorum.voters is empty.
	dynamic := len(cfg.Voters) == 0
	fs, err := controller.BootstrapFeatures(mv, given, dynamic)
	if err != nil {
		return bootstrap{}, &formatError{err.Error()}
	}
	kv, err := controller.EffectiveKRaftVersion(given, dynamic)
	if err != nil {
		return bootstrap{}, &formatError{err.Error()}
	}
	b := bootstrap{MV: mv, Features: fs, KRaftVersion: kv}
	for _, a := range o.Scram {
		r, err := parseAddScram(a)
		if err != nil {
			return bootstrap{}, err
		}
		if mv < mvScram {
			return bootstrap{}, &formatError{"SCRAM is only supported in metadata.version 3.5-IV2 or later."}
		}
		b.Scram = append(b.Scram, r)
	}
	return b, nil
}

// dynamicVoter is one --initial-controllers entry (DynamicVoter):
// id@host:port:directoryId.
type dynamicVoter struct {
	ID   int32
	Host string
	Port uint16
	Dir  [16]byte
}

// parseDynamicVoters is DynamicVoters.parse, with its messages.
func parseDynamicVoters(s string) ([]dynamicVoter, error) {
	var out []dynamicVoter
	seen := map[int32]bool{}
	for _, item := range strings.Split(strings.TrimSpace(s), ",") {
		if item == "" {
			continue
		}
		v, err := parseDynamicVoter(item)
		if err != nil {
			return nil, err
		}
		if seen[v.ID] {
			return nil, fmt.Errorf("Node id %d was specified more than once.", v.ID)
		}
		seen[v.ID] = true
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("No voters given.")
	}
	return out, nil
}

// parseDynamicVoter is DynamicVoter.parse.
func parseDynamicVoter(in string) (dynamicVoter, error) {
	var v dynamicVoter
	in = strings.TrimSpace(in)
	at := strings.Index(in, "@")
	switch {
	case at < 0:
		return v, errors.New("No @ found in dynamic voter string.")
	case at == 0:
		return v, errors.New("Invalid @ at beginning of dynamic voter string.")
	}
	id, err := strconv.ParseInt(in[:at], 10, 32)
	if err != nil {
		return v, errors.New("Failed to parse node id in dynamic voter string.")
	}
	if id < 0 {
		return v, fmt.Errorf("Invalid negative node id %d in dynamic voter string.", id)
	}
	v.ID = int32(id)
	in = in[at+1:]
	if in == "" {
		return v, errors.New("No hostname found after node id.")
	}
	if strings.HasPrefix(in, "[") {
		end := strings.Index(in, "]")
		if end < 0 {
			return v, errors.New("Hostname began with left bracket, but no right bracket was found.")
		}
		v.Host, in = in[1:end], in[end+1:]
	} else {
		c := strings.Index(in, ":")
		if c < 0 {
			return v, errors.New("No colon following hostname could be found.")
		}
		v.Host, in = in[:c], in[c:]
	}
	if !strings.HasPrefix(in, ":") {
		return v, errors.New("Port section must start with a colon.")
	}
	in = in[1:]
	c := strings.Index(in, ":")
	if c < 0 {
		return v, errors.New("No colon following port could be found.")
	}
	port, err := strconv.ParseInt(in[:c], 10, 32)
	if err != nil {
		return v, errors.New("Failed to parse port in dynamic voter string.")
	}
	if port < 0 || port > 65535 {
		return v, fmt.Errorf("Invalid port %d in dynamic voter string.", port)
	}
	v.Port = uint16(port)
	if v.Dir, err = raft.ParseDirectoryID(in[c+1:]); err != nil {
		return v, errors.New("Failed to parse directory ID in dynamic voter string.")
	}
	return v, nil
}

// voterSet is DynamicVoters.toVoterSet: each voter on the first controller
// listener, supporting kraft.version 0-1.
func voterSet(voters []dynamicVoter, listener string) (raft.VoterSet, error) {
	var vs []raft.Voter
	for _, d := range voters {
		vs = append(vs, raft.Voter{Key: raft.ReplicaKey{ID: d.ID, DirectoryID: d.Dir},
			Endpoints: []raft.Endpoint{{Name: listener, Host: d.Host, Port: d.Port}}, KRaftMin: 0, KRaftMax: 1})
	}
	return raft.NewVoterSet(vs...)
}

// standaloneVoters is StorageTool.createStandaloneDynamicVoters: this
// controller alone, on its first advertised controller listener (host
// "localhost" when it has none), with a new directory id.
func standaloneVoters(cfg *config.Config) ([]dynamicVoter, error) {
	if !cfg.ProcessRoles.IsController() {
		return nil, &formatError{"You can only use --standalone on a controller."}
	}
	if len(cfg.AdvertisedControllerListeners) == 0 {
		return nil, &formatError{"No controller listeners found."}
	}
	l := cfg.AdvertisedControllerListeners[0]
	host := l.Host
	if host == "" {
		host = "localhost"
	}
	return []dynamicVoter{{ID: cfg.NodeID, Host: host, Port: uint16(l.Port), Dir: config.NewDirectoryID()}}, nil
}

// mvScram is metadata.version 3.5-IV2.
const mvScram = 11

// String is BootstrapMetadata.toString, which kafka-storage.sh format prints.
func (b bootstrap) String() string {
	recs := make([]string, len(b.Features))
	for i, f := range b.Features {
		recs[i] = fmt.Sprintf("ApiMessageAndVersion(FeatureLevelRecord(name='%s', featureLevel=%d) at version 0)", f.Name, f.Level)
	}
	for _, r := range b.Scram {
		recs = append(recs, fmt.Sprintf("ApiMessageAndVersion(UserScramCredentialRecord(name='%s', mechanism=%d, salt=(redacted), storedKey=(redacted), serverKey=(redacted), iterations=%d) at version 0)",
			r.Name, r.Mechanism, r.Iterations))
	}
	return fmt.Sprintf("BootstrapMetadata(records=[%s], metadataVersionLevel=%d, source=format command)", strings.Join(recs, ", "), b.MV)
}

// formatError is a failure kafka-storage.sh reports on stderr with exit code 1.
type formatError struct{ msg string }

func (e *formatError) Error() string { return e.msg }

// dirState is what a directory holds before formatting.
type dirState struct {
	Dir   string
	Meta  config.MetaProperties
	Found bool // meta.properties exists and was read
	// Err: meta.properties exists but could not be read or is malformed (an
	// I/O error, a directory, a bad version...). Kafka's
	// MetaPropertiesEnsemble.Loader puts such a dir in errorLogDirs: it is
	// never formatted and the node starts with it offline.
	Err error
}

// readDirs reads meta.properties of every directory. A directory that does not
// exist or has no meta.properties is empty; on any other error, the directory
// is an error dir (Err set), as MetaPropertiesEnsemble.Loader.load catches every
// exception but NoSuchFileException.
func readDirs(dirs []string) []dirState {
	var out []dirState
	for _, d := range dirs {
		m, err := config.ReadMetaProperties(d)
		switch {
		case err == nil:
			out = append(out, dirState{Dir: d, Meta: m, Found: true})
		case errors.Is(err, config.ErrNoMetaProperties):
			out = append(out, dirState{Dir: d})
		default:
			out = append(out, dirState{Dir: d, Err: err})
		}
	}
	return out
}

// verifyDirs checks the formatted directories agree with each other and with
// the configured node id and, when non-empty, clusterID.
func verifyDirs(states []dirState, nodeID int32, clusterID string) error {
	formatted := map[string]config.MetaProperties{}
	for _, s := range states {
		if s.Found {
			formatted[s.Dir] = s.Meta
		}
	}
	if err := config.VerifyMetaProperties(formatted, nodeID); err != nil {
		return err
	}
	if clusterID == "" {
		return nil
	}
	for _, s := range states {
		if s.Found && s.Meta.ClusterID != "" && s.Meta.ClusterID != clusterID {
			return fmt.Errorf("Invalid cluster.id in: %s/%s. Expected %s, but read %s", s.Dir, config.MetaPropertiesFile, clusterID, s.Meta.ClusterID)
		}
	}
	return nil
}

// dirDescription is Formatter.DirectoryType.description (calculate): the
// metadata log dir of a node among the initial controllers is a "dynamic
// metadata voter directory", of another one with initial controllers a
// "dynamic metadata directory".
func dirDescription(dir string, cfg *config.Config, initial []dynamicVoter) string {
	switch {
	case dir != cfg.MetadataLogDir:
		return "data directory"
	case initial == nil:
		return "metadata directory"
	case initialVoter(initial, cfg.NodeID) != nil:
		return "dynamic metadata voter directory"
	}
	return "dynamic metadata directory"
}

func initialVoter(initial []dynamicVoter, id int32) *dynamicVoter {
	for i := range initial {
		if initial[i].ID == id {
			return &initial[i]
		}
	}
	return nil
}

// formatEmpty writes meta.properties v1 into every empty directory, printing
// Kafka's line for each before writing it, and, on a node with the
// controller role, the bootstrap metadata into the zero checkpoint of the
// metadata log dir when that is one of them (Formatter.doFormat).
func formatEmpty(w io.Writer, cfg *config.Config, states []dirState, clusterID string, b bootstrap, initial []dynamicVoter) error {
	fmt.Fprintf(w, "Bootstrap metadata: %s\n", b)
	mv := metadatacache.MetadataVersionName(b.MV)
	used := map[config.UUID]bool{}
	for _, s := range states {
		used[s.Meta.DirectoryID] = true
	}
	for i := range states {
		s := &states[i]
		if s.Found || s.Err != nil {
			continue
		}
		id := config.NewDirectoryID()
		for used[id] {
			id = config.NewDirectoryID()
		}
		if v := initialVoter(initial, cfg.NodeID); v != nil && s.Dir == cfg.MetadataLogDir {
			// the directory id the initial voter set names (DYNAMIC_METADATA_VOTER_DIRECTORY)
			id = config.UUID(v.Dir)
		}
		used[id] = true
		fmt.Fprintf(w, "Formatting %s %s with metadata.version %s.\n", dirDescription(s.Dir, cfg, initial), s.Dir, mv)
		if err := os.MkdirAll(s.Dir, 0o755); err != nil {
			return fmt.Errorf("Error while writing meta.properties file %s: %v", s.Dir, err)
		}
		m := config.MetaProperties{Version: 1, ClusterID: clusterID, NodeID: cfg.NodeID, DirectoryID: id}
		if err := config.WriteMetaProperties(s.Dir, m); err != nil {
			return fmt.Errorf("Error while writing meta.properties file %s: %v", s.Dir, err)
		}
		if s.Dir == cfg.MetadataLogDir && cfg.ProcessRoles.IsController() {
			ctl := raft.SnapshotControl{KRaftVersion: b.KRaftVersion}
			if b.KRaftVersion > 0 {
				ctl.Voters = b.Voters
			}
			if err := controller.WriteBootstrapCheckpointControl(s.Dir, b.records(), time.Now().UnixMilli(), ctl); err != nil {
				return fmt.Errorf("Error while writing the bootstrap snapshot in %s: %v", s.Dir, err)
			}
		}
		s.Meta, s.Found = m, true
	}
	return nil
}

// runFormat is kafka-storage.sh format (StorageTool.runFormatCommand + Formatter).
func runFormat(w io.Writer, cfg *config.Config, o formatOptions) error {
	if o.ClusterID == "" {
		return &formatError{"You must specify the cluster id."}
	}
	// StorageTool.runFormatCommand's order: the quorum flags, then the
	// Formatter (release version and features, then the directories).
	if (o.Standalone || o.InitialControllers != "") && len(cfg.Voters) > 0 {
		return &formatError{"You cannot specify controller.quorum.voters and format the node with --initial-controllers or --standalone. If you want to use dynamic quorum, please remove controller.quorum.voters and specify controller.quorum.bootstrap.servers instead."}
	}
	var initial []dynamicVoter
	if o.InitialControllers != "" {
		vs, err := parseDynamicVoters(o.InitialControllers)
		if err != nil {
			return &formatError{err.Error()}
		}
		initial = vs
	}
	if o.Standalone {
		vs, err := standaloneVoters(cfg)
		if err != nil {
			return err
		}
		initial = vs
	}
	if !o.NoInitialControls && cfg.ProcessRoles.IsController() && len(cfg.Voters) == 0 && initial == nil {
		return &formatError{"Because controller.quorum.voters is not set on this controller, you must specify one of the following: --standalone, --initial-controllers, or --no-initial-controllers."}
	}
	b, err := resolveBootstrap(cfg, o)
	if err != nil {
		return err
	}
	if initial != nil {
		vs, err := voterSet(initial, firstListener(cfg))
		if err != nil {
			return &formatError{err.Error()}
		}
		b.Voters = &vs
	}
	dirs := cfg.AllDirs()
	sort.Strings(dirs)
	states := readDirs(dirs)
	if err := verifyDirs(states, cfg.NodeID, o.ClusterID); err != nil {
		return err
	}
	empty, found := 0, 0
	for _, s := range states {
		if s.Found && !o.IgnoreFormatted {
			return &formatError{fmt.Sprintf("Log directory %s is already formatted. Use --ignore-formatted to ignore this directory and format the others.", s.Dir)}
		}
		switch {
		case s.Found:
			found++
		case s.Err == nil:
			empty++
		}
	}
	// Formatter.doFormat: error dirs are skipped, not fatal, unless nothing is left
	if len(states) > empty+found {
		for _, s := range states {
			if s.Err != nil {
				fmt.Fprintf(w, "I/O error trying to read log directory %s. Ignoring...\n", s.Dir)
			}
		}
		if empty+found == 0 {
			return &formatError{"No available log directories to format."}
		}
	}
	if empty == 0 {
		fmt.Fprintln(w, "All of the log directories are already formatted.")
		return nil
	}
	return formatEmpty(w, cfg, states, o.ClusterID, b, initial)
}

// firstListener is controller.listener.names[0].
func firstListener(cfg *config.Config) string {
	if len(cfg.ControllerListenerNames) > 0 {
		return cfg.ControllerListenerNames[0]
	}
	return "CONTROLLER"
}

// dockerDefaultClusterID is the CLUSTER_ID Apache Kafka's docker image uses when
// none is given (docker/resources/common-scripts/configureDefaults).
const dockerDefaultClusterID = "5L6g3nShT-eMCtK--X86sw"

// singleNode reports whether the node is the whole cluster: a combined
// broker+controller that is the only voter.
func singleNode(cfg *config.Config) bool {
	return cfg.ProcessRoles.IsBroker() && cfg.ProcessRoles.IsController() &&
		len(cfg.Voters) == 1 && cfg.Voters[0].ID == cfg.NodeID
}

// preparedStorage is what prepareStorage found and did.
type preparedStorage struct {
	ClusterID string
	DirIDs    map[string][16]byte // every readable log dir -> its directory.id
	Formatted []string            // the directories it formatted
	// Unreadable are the dirs whose meta.properties could not be read
	// (errorLogDirs): they start offline; the metadata log dir is never one.
	Unreadable []dirState
	Warning    string // for the caller to log ("" if none)
}

// OfflineDirs lists the unreadable dirs (broker.NodeConfig.OfflineLogDirs).
func (p preparedStorage) OfflineDirs() []string {
	var out []string
	for _, s := range p.Unreadable {
		out = append(out, s.Dir)
	}
	return out
}

// prepareStorage is the first-start auto-format: every empty directory is
// formatted with the cluster id already on disk, else $CLUSTER_ID, else a random
// one for a single-node cluster, else the docker image's default cluster id (so
// the nodes of a multi-node cluster agree, as with apache/kafka's image).
//
// A directory whose meta.properties exists but cannot be read is left alone and
// starts offline, as KafkaRaftServer.initializeLogDirs hands the errorLogDirs of
// MetaPropertiesEnsemble.Loader to LogManager; MetaPropertiesEnsemble.verify
// still fails the startup when none is readable or empty ("No readable
// meta.properties files found.") or when the metadata log dir is one.
func prepareStorage(w io.Writer, cfg *config.Config, envClusterID string) (p preparedStorage, err error) {
	dirs := cfg.AllDirs()
	states := readDirs(dirs)
	for _, s := range states {
		if s.Found && s.Meta.Version == 0 {
			return p, fmt.Errorf("log directory %s has a version 0 (ZooKeeper-era) meta.properties; kgo-broker runs in KRaft mode only: use a new log directory", s.Dir)
		}
	}
	if err := verifyDirs(states, cfg.NodeID, ""); err != nil {
		return p, err
	}
	for _, s := range states {
		if s.Err != nil {
			p.Unreadable = append(p.Unreadable, s)
		}
	}
	if len(p.Unreadable) == len(states) {
		var causes []string
		for _, s := range p.Unreadable {
			causes = append(causes, s.Err.Error())
		}
		return p, fmt.Errorf("No readable meta.properties files found. (%s)", strings.Join(causes, "; "))
	}
	for _, s := range p.Unreadable {
		if s.Dir == cfg.MetadataLogDir {
			return p, fmt.Errorf("Encountered I/O error in metadata log directory %s. Cannot continue. (%w)", s.Dir, s.Err)
		}
	}
	clusterID := ""
	for _, s := range states {
		if s.Found && s.Meta.ClusterID != "" {
			clusterID = s.Meta.ClusterID
			break
		}
	}
	if clusterID != "" && envClusterID != "" && envClusterID != clusterID {
		for _, s := range states {
			if s.Found {
				return p, fmt.Errorf("CLUSTER_ID=%s does not match cluster.id %s in %s/%s: unset CLUSTER_ID or use an empty log directory", envClusterID, clusterID, s.Dir, config.MetaPropertiesFile)
			}
		}
	}
	for _, s := range states {
		if !s.Found && s.Err == nil {
			p.Formatted = append(p.Formatted, s.Dir)
		}
	}
	switch {
	case clusterID != "":
	case envClusterID != "":
		clusterID = envClusterID
	case singleNode(cfg):
		clusterID = config.RandomUUID().String()
	default:
		clusterID = dockerDefaultClusterID
		p.Warning = "CLUSTER_ID is not set: formatting with Apache Kafka's docker image default cluster id " + dockerDefaultClusterID +
			" so that every node of this multi-node cluster agrees; set CLUSTER_ID (the same on every node) to choose one"
	}
	if len(p.Formatted) > 0 {
		b := defaultBootstrap()
		if len(cfg.Voters) == 0 {
			// controller.quorum.bootstrap.servers: a dynamic quorum this node
			// joins (as --no-initial-controllers formats it)
			b.KRaftVersion = 1
		}
		if err := formatEmpty(w, cfg, states, clusterID, b, nil); err != nil {
			return preparedStorage{}, err
		}
	} else {
		p.Warning = ""
	}
	p.ClusterID = clusterID
	p.DirIDs = map[string][16]byte{}
	for _, s := range states {
		if s.Found {
			p.DirIDs[s.Dir] = s.Meta.DirectoryID
		}
	}
	return p, nil
}

// parseFormatArgs parses kafka-storage.sh format's arguments.
func parseFormatArgs(args []string) (configFile string, o formatOptions, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		if !strings.HasPrefix(a, "--") {
			name, hasVal = a, false
		}
		value := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("argument %s: expected one argument", name)
			}
			i++
			return args[i], nil
		}
		var v string
		switch name {
		case "-t", "--cluster-id":
			v, err = value()
			o.ClusterID = v
		case "-c", "--config":
			v, err = value()
			configFile = v
		case "-r", "--release-version":
			v, err = value()
			o.ReleaseVersion = v
		case "-I", "--initial-controllers":
			v, err = value()
			o.InitialControllers = v
		case "-g", "--ignore-formatted":
			o.IgnoreFormatted = true
		case "-s", "--standalone":
			o.Standalone = true
		case "-N", "--no-initial-controllers":
			o.NoInitialControls = true
		case "-f", "--feature":
			v, err = value()
			if err == nil {
				var fname string
				var level int16
				fname, level, err = parseFeatureLevel(v)
				if o.Features == nil {
					o.Features = map[string]int16{}
				}
				o.Features[fname] = level
			}
		case "-S", "--add-scram":
			v, err = value()
			o.Scram = append(o.Scram, v)
		default:
			return "", o, fmt.Errorf("unrecognized arguments: '%s'", a)
		}
		if err != nil {
			return "", o, err
		}
	}
	if configFile == "" {
		return "", o, errors.New("argument --config/-c is required")
	}
	if o.ClusterID == "" {
		return "", o, errors.New("argument --cluster-id/-t is required")
	}
	n := 0
	for _, b := range []bool{o.Standalone, o.NoInitialControls, o.InitialControllers != ""} {
		if b {
			n++
		}
	}
	if n > 1 {
		return "", o, errors.New("argument --standalone, --no-initial-controllers and --initial-controllers are mutually exclusive")
	}
	return configFile, o, nil
}

// parseFeatureLevel parses a --feature value (StorageTool.parseNameAndLevel).
func parseFeatureLevel(s string) (string, int16, error) {
	name, level, ok := strings.Cut(s, "=")
	if !ok {
		return "", 0, fmt.Errorf("Can't parse feature=level string %s: equals sign not found.", s)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(level), 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("Can't parse feature=level string %s: unable to parse %s as a short.", s, strings.TrimSpace(level))
	}
	return strings.TrimSpace(name), int16(n), nil
}
