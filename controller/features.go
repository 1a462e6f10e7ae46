package controller

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// Features: what Kafka 4.4 defines (server-common Feature.java and its
// *Version enums, MetadataVersion.java), what kgo-broker implements of it,
// and the rules both the format command (Formatter) and UpdateFeatures
// (FeatureControlManager, QuorumFeatures) apply.
//
// metadata.version goes from 3.3-IV3 (7) to 4.4-IV2 (33)
// (metadatacache.MetadataVersions); the controller writes every record at the
// version the finalized level implies (metadatacache.RecordVersionFor). A new
// cluster bootstraps 4.4-IV2, as kafka-storage.sh format does, with the
// feature levels Kafka 4.4 formats it with except two whose newest levels
// kgo-broker does not implement yet (see productionFeatures).
// kraft.version is a raft control record (KRaftVersionRecord), never a
// FeatureLevelRecord: 0 for static voters (controller.quorum.voters), 1 for
// dynamic voters (KIP-853), which a format with --standalone,
// --initial-controllers or --no-initial-controllers gets and UpdateFeatures
// upgrades a running static quorum to (raft.Node.UpgradeKRaftVersion).

const (
	featureMetadataVersion = metadatacache.MetadataVersionFeature
	featureKRaftVersion    = "kraft.version"
	featureGroupVersion    = "group.version"
	featureTxnVersion      = "transaction.version"
	featureELRVersion      = "eligible.leader.replicas.version"
	featureShareVersion    = "share.version"
	featureStreamsVersion  = "streams.version"
)

// Metadata version feature levels the controller's decisions depend on.
const (
	mv3_3_IV1 int16 = 5 // NoOpRecord
	mv3_3_IV2 int16 = 6 // BrokerRegistrationChangeRecord replaces Fence/UnfenceBrokerRecord
	mv3_3_IV3       = metadatacache.MV3_3_IV3
	mv3_6_IV0 int16 = 12 // no leader epoch bump when the ISR shrinks
	mv3_6_IV1       = metadatacache.MV3_6_IV1
	mv3_7_IV0       = metadatacache.MV3_7_IV0
	mv3_7_IV2       = metadatacache.MV3_7_IV2
	mv4_1_IV0 int16 = 26 // eligible.leader.replicas.version 1 by default

	// DefaultMetadataVersion is the metadata.version a new cluster
	// bootstraps: the newest Kafka 4.4 level, 4.4-IV2 (33), as
	// kafka-storage.sh format picks MetadataVersion.LATEST_PRODUCTION.
	DefaultMetadataVersion = metadatacache.LatestMetadataVersion
)

// FeatureLevelSpec is one level of a feature (a FeatureVersion).
type FeatureLevelSpec struct {
	// BootstrapMV is the metadata.version from which a new cluster gets this
	// level by default (FeatureVersion.bootstrapMetadataVersion).
	BootstrapMV int16
	// Depends are the levels other features must have at least
	// (FeatureVersion.dependencies); metadata.version among them.
	Depends map[string]int16
}

// FeatureSpec is one production feature of Kafka 4.4 besides
// metadata.version.
type FeatureSpec struct {
	Name string
	// Levels[i] is level i (level 0 is the feature off); the last is Kafka
	// 4.4's latest production level.
	Levels []FeatureLevelSpec
	// MaxSupported is the highest level kgo-broker implements, the maximum
	// of the range every node advertises (ApiVersions SupportedFeatures,
	// BrokerRegistration Features).
	MaxSupported int16
	// Unsupported says why MaxSupported is below Kafka 4.4's latest level.
	Unsupported string
}

// KafkaMax is Kafka 4.4's latest production level of the feature.
func (f FeatureSpec) KafkaMax() int16 { return int16(len(f.Levels) - 1) }

// DefaultLevel is the level a cluster bootstrapped at metadata.version mv
// gets: Kafka's Feature.defaultLevel (the newest level whose bootstrap
// metadata.version is at most mv), capped at what kgo-broker supports.
func (f FeatureSpec) DefaultLevel(mv int16) int16 {
	var level int16
	for i, l := range f.Levels {
		if l.BootstrapMV <= mv {
			level = int16(i)
		}
	}
	return min(level, f.MaxSupported)
}

// productionFeatures are Kafka 4.4's Feature.PRODUCTION_FEATURES, in its
// order, each supported up to Kafka 4.4's latest level, so a kgo-broker
// node registers with a Kafka controller whose cluster was formatted at
// Kafka's defaults: group.version 1 (KIP-848), transaction.version 2 (KIP-890),
// eligible.leader.replicas.version 1 (KIP-966, the default from 4.1-IV0;
// partitions.go), share.version 2 (KIP-932 share groups at level 1, the
// KIP-1191 dead-letter queue at level 2, from 4.4-IV0) and streams.version
// 1 (KIP-1071 streams groups, the default from 4.2-IV1; group/streams.go)
// are supported as Kafka 4.4 bootstraps them.
var productionFeatures = []FeatureSpec{
	{Name: featureKRaftVersion, Levels: levels(metadatacache.MV3_3_IV3, 21), MaxSupported: 1},
	{Name: featureTxnVersion, Levels: levels(metadatacache.MV3_3_IV3, 24, 24), MaxSupported: 2},
	{Name: featureGroupVersion, Levels: levels(metadatacache.MV3_3_IV3, 22), MaxSupported: 1},
	{Name: featureELRVersion, Levels: []FeatureLevelSpec{{BootstrapMV: metadatacache.MV3_3_IV3},
		{BootstrapMV: mv4_1_IV0, Depends: map[string]int16{featureMetadataVersion: metadatacache.MV4_0_IV1}}}, MaxSupported: 1},
	{Name: featureShareVersion, Levels: levels(metadatacache.MV3_3_IV3, 28, 31), MaxSupported: 2},
	{Name: featureStreamsVersion, Levels: levels(metadatacache.MV3_3_IV3, 29), MaxSupported: 1},
}

func levels(mvs ...int16) []FeatureLevelSpec {
	out := make([]FeatureLevelSpec, len(mvs))
	for i, mv := range mvs {
		out[i] = FeatureLevelSpec{BootstrapMV: mv}
	}
	return out
}

// FeatureSpecs returns the production features besides metadata.version.
func FeatureSpecs() []FeatureSpec { return slices.Clone(productionFeatures) }

// FeatureSpecOf returns the spec of a feature other than metadata.version.
func FeatureSpecOf(name string) (FeatureSpec, bool) {
	i := slices.IndexFunc(productionFeatures, func(f FeatureSpec) bool { return f.Name == name })
	if i < 0 {
		return FeatureSpec{}, false
	}
	return productionFeatures[i], true
}

// FeatureRange is a supported [Min, Max] range of a feature.
type FeatureRange struct {
	Name     string
	Min, Max int16
}

// SupportedFeatures are the ranges every kgo-broker node advertises and
// checks updates against (QuorumFeatures' local features; the broker's
// BrokerRegistration Features and ApiVersions SupportedFeatures):
// metadata.version 3.3-IV3..4.4-IV2, then every production feature from 0
// to the level kgo-broker implements. Sorted by name.
func SupportedFeatures() []FeatureRange {
	out := []FeatureRange{{featureMetadataVersion, metadatacache.MinimumMetadataVersion, metadatacache.LatestMetadataVersion}}
	for _, f := range productionFeatures {
		out = append(out, FeatureRange{f.Name, 0, f.MaxSupported})
	}
	slices.SortFunc(out, func(a, b FeatureRange) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// localRange is this node's range of a feature (0-0 for one it does not know,
// QuorumFeatures.DISABLED).
func localRange(name string) FeatureRange {
	for _, r := range SupportedFeatures() {
		if r.Name == name {
			return r
		}
	}
	return FeatureRange{name, 0, 0}
}

// Feature is one finalized feature level written at bootstrap as a
// FeatureLevelRecord.
type Feature struct {
	Name  string
	Level int16
}

// DefaultBootstrapFeatures are the features a new cluster gets: what
// BootstrapFeatures(DefaultMetadataVersion, nil, false) returns, which is
// metadata.version 4.4-IV2, eligible.leader.replicas.version 1,
// group.version 1, share.version 2, streams.version 1 and
// transaction.version 2, as Kafka 4.4 (see productionFeatures).
func DefaultBootstrapFeatures() []Feature {
	fs, err := BootstrapFeatures(DefaultMetadataVersion, nil, false)
	if err != nil {
		panic(err)
	}
	return fs
}

// checkBootstrapFeatures checks bootstrap feature levels against what this
// node supports: a directory formatted by Kafka 4.4's tools with its
// defaults finalizes streams.version 1, which kgo-broker does not
// implement, and starting from it would make every kgo-broker registration
// fail.
func checkBootstrapFeatures(fs []Feature) error {
	hasMV := false
	for _, f := range fs {
		if f.Name == featureKRaftVersion {
			continue // a raft control record, not a finalized feature
		}
		r := localRange(f.Name)
		if f.Name == featureMetadataVersion {
			hasMV = true
		} else if f.Level == 0 {
			continue
		}
		if f.Level < r.Min || f.Level > r.Max {
			why := ""
			if spec, ok := FeatureSpecOf(f.Name); ok && spec.Unsupported != "" {
				why = ": " + spec.Unsupported
			}
			return featureErrorf("the bootstrap metadata finalizes %s %d, which kgo-broker does not support (it supports %d to %d)%s; format the metadata log dir with kgo-broker format, or with kafka-storage.sh format --feature %s=%d",
				f.Name, f.Level, r.Min, r.Max, why, f.Name, r.Max)
		}
	}
	if !hasMV {
		return featureErrorf("the bootstrap features need %s", featureMetadataVersion)
	}
	return nil
}

// FeatureError is a refused feature level; its text is Kafka's.
type FeatureError struct{ Msg string }

func (e *FeatureError) Error() string { return e.Msg }

func featureErrorf(format string, args ...any) error {
	return &FeatureError{fmt.Sprintf(format, args...)}
}

// BootstrapFeatures computes the features a format writes for
// metadata.version mv and the --feature levels given (Formatter's
// calculateEffectiveFeatureLevels): every given feature must be a
// production feature, kraft.version follows the quorum's kind
// (dynamicQuorum: --standalone, --initial-controllers or
// --no-initial-controllers without controller.quorum.voters), the others
// default to their DefaultLevel at mv, and every level must exist, be
// supported by kgo-broker and have its dependencies met. The result is
// metadata.version first, then the non-zero levels by name, kraft.version
// left out (it is a raft control record). given must not hold
// metadata.version: resolve it first (ResolveReleaseVersion).
func BootstrapFeatures(mv int16, given map[string]int16, dynamicQuorum bool) ([]Feature, error) {
	if _, ok := metadatacache.MetadataVersionOf(mv); !ok {
		return nil, featureErrorf("No MetadataVersion with feature level %d. Valid feature levels are from %d to %d.",
			mv, metadatacache.MinimumMetadataVersion, metadatacache.LatestMetadataVersion)
	}
	supported := make([]string, 0, len(productionFeatures))
	for _, f := range productionFeatures {
		supported = append(supported, f.Name)
	}
	slices.Sort(supported)
	for _, name := range slices.Sorted(maps.Keys(given)) {
		if name == featureMetadataVersion {
			continue
		}
		if !slices.Contains(supported, name) {
			return nil, featureErrorf("Unsupported feature: %s. Supported features are: %s", name, strings.Join(supported, ", "))
		}
	}
	effective := map[string]int16{featureMetadataVersion: mv}
	for _, f := range productionFeatures {
		level, ok := given[f.Name]
		switch {
		case f.Name == featureKRaftVersion:
			l, err := kraftVersionLevel(level, ok, dynamicQuorum)
			if err != nil {
				return nil, err
			}
			level = l
		case !ok:
			level = f.DefaultLevel(mv)
		}
		effective[f.Name] = level
	}
	for _, f := range productionFeatures {
		if err := checkFeatureLevel(f, effective[f.Name], effective); err != nil {
			return nil, err
		}
	}
	out := []Feature{{featureMetadataVersion, mv}}
	for _, name := range slices.Sorted(maps.Keys(effective)) {
		if l := effective[name]; name != featureMetadataVersion && name != featureKRaftVersion && l > 0 {
			out = append(out, Feature{name, l})
		}
	}
	return out, nil
}

// EffectiveKRaftVersion is the kraft.version a format writes (the --feature
// kraft.version given, else 1 for a dynamic quorum and 0 for a static one).
func EffectiveKRaftVersion(given map[string]int16, dynamicQuorum bool) (int16, error) {
	level, ok := given[featureKRaftVersion]
	return kraftVersionLevel(level, ok, dynamicQuorum)
}

// kraftVersionLevel is Formatter.effectiveKRaftFeatureLevel: not given, a
// dynamic quorum gets kraft.version 1, a static one 0.
func kraftVersionLevel(level int16, given, dynamicQuorum bool) (int16, error) {
	if !given {
		if dynamicQuorum {
			return 1, nil
		}
		return 0, nil
	}
	if level == 0 && dynamicQuorum {
		return 0, featureErrorf("Cannot set kraft.version to 0 if controller.quorum.voters is empty and one of the flags --standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic controllers support, try removing the --feature flag for kraft.version.")
	}
	if level != 0 && !dynamicQuorum {
		return 0, featureErrorf("Cannot set kraft.version to %d unless controller.quorum.voters is empty and one of the flags --standalone, --initial-controllers, or --no-initial-controllers is used. For dynamic controllers support, try using one of --standalone, --initial-controllers, or --no-initial-controllers and removing controller.quorum.voters.", level)
	}
	return level, nil
}

// checkFeatureLevel checks that level is one of f's levels
// (Feature.fromFeatureLevel), that kgo-broker implements it, and that its
// dependencies hold in the proposed levels (Feature.validateVersion).
func checkFeatureLevel(f FeatureSpec, level int16, proposed map[string]int16) error {
	if level < 0 || level > f.KafkaMax() {
		return featureErrorf("No feature:%s with feature level %d", f.Name, level)
	}
	if level > f.MaxSupported {
		return featureErrorf("%s level %d is not supported by kgo-broker (it supports levels 0 to %d): %s", f.Name, level, f.MaxSupported, f.Unsupported)
	}
	return checkDependencies(f.Name, level, f.Levels[level], proposed)
}

// checkDependencies is Feature.validateVersion.
func checkDependencies(name string, level int16, spec FeatureLevelSpec, proposed map[string]int16) error {
	if level >= 1 {
		if mv, ok := proposed[featureMetadataVersion]; !ok || mv < metadatacache.MinimumMetadataVersion {
			return featureErrorf("%s could not be set to %d because it depends on metadata.version=%d (%s)",
				name, level, metadatacache.MinimumMetadataVersion, metadatacache.MetadataVersionName(metadatacache.MinimumMetadataVersion))
		}
	}
	for _, dep := range slices.Sorted(maps.Keys(spec.Depends)) {
		want := spec.Depends[dep]
		if have, ok := proposed[dep]; !ok || have < want {
			return featureErrorf("%s could not be set to %d because it depends on %s level %d", name, level, dep, want)
		}
	}
	return nil
}

// ResolveReleaseVersion resolves the format command's --release-version and
// --feature metadata.version=N into a metadata.version level (Formatter's
// calculateEffectiveReleaseVersion and StorageTool's parsing); neither
// given means DefaultMetadataVersion.
func ResolveReleaseVersion(release string, given map[string]int16) (int16, error) {
	level, viaFeature := given[featureMetadataVersion]
	if release != "" {
		mv, ok := metadatacache.ParseMetadataVersion(release)
		if !ok {
			return 0, featureErrorf("Unknown metadata.version '%s'. Supported metadata.version are: %s", release, metadatacache.MetadataVersionNames())
		}
		if viaFeature {
			return 0, featureErrorf("Use --release-version instead of --feature metadata.version=X to avoid ambiguity.")
		}
		return mv.Level, nil
	}
	if viaFeature {
		if _, ok := metadatacache.MetadataVersionOf(level); !ok {
			return 0, featureErrorf("No MetadataVersion with feature level %d. Valid feature levels are from %d to %d.",
				level, metadatacache.MinimumMetadataVersion, metadatacache.LatestMetadataVersion)
		}
		return level, nil
	}
	return DefaultMetadataVersion, nil
}

func registerBrokerRecordVersion(mv int16) int16 {
	return metadatacache.RecordVersionFor(metadatacache.KeyRegisterBroker, mv)
}

func partitionRecordVersion(mv int16) int16 {
	return metadatacache.RecordVersionFor(metadatacache.KeyPartition, mv)
}

func partitionChangeRecordVersion(mv int16) int16 {
	return metadatacache.RecordVersionFor(metadatacache.KeyPartitionChange, mv)
}

func directoryAssignmentSupported(mv int16) bool { return mv >= mv3_7_IV2 }

// leaderEpochBumpOnIsrShrink is MetadataVersion.isLeaderEpochBumpRequiredOnIsrShrink.
func leaderEpochBumpOnIsrShrink(mv int16) bool { return mv < mv3_6_IV0 }
