package metadatacache

import (
	"maps"
	"slices"
)

// metadata.version feature levels at which record versions change
// (MetadataVersion.java).
const (
	mv33IV3 int16 = 7  // InControlledShutdown in broker registrations
	mv34IV0 int16 = 8  // ZK migration (RegisterBrokerRecord v2)
	mv37IV2 int16 = 17 // directory assignment (KIP-858)
	mv40IV1 int16 = 23 // eligible leader replicas (KIP-966)
)

// RecordVersionFor returns the version of a record the active controller
// writes at a metadata.version feature level, as MetadataVersion's
// registerBrokerRecordVersion, partitionRecordVersion and
// partitionChangeRecordVersion do. Level 0 (unknown) returns the newest
// version. Records with a single version return 0.
func RecordVersionFor(key int16, metadataVersion int16) int16 {
	if metadataVersion <= 0 {
		if r := NewRecord(key); r != nil {
			return r.MaxVersion()
		}
		return 0
	}
	switch key {
	case KeyRegisterBroker:
		switch {
		case metadataVersion >= mv37IV2:
			return 3
		case metadataVersion >= mv34IV0:
			return 2
		case metadataVersion >= mv33IV3:
			return 1
		}
	case KeyPartition, KeyPartitionChange:
		switch {
		case metadataVersion >= mv40IV1:
			return 2
		case metadataVersion >= mv37IV2:
			return 1
		}
	case KeyBrokerRegistrationChange:
		switch {
		case metadataVersion >= mv37IV2:
			return 2
		case metadataVersion >= mv33IV3:
			return 1
		}
	}
	return 0
}

// Records writes the image back as metadata records, in the order of
// Kafka's MetadataImage.write: features (metadata.version first), brokers,
// controllers, topics with their partitions, configs, client quotas,
// producer ids. Record versions follow the image's metadata.version (see
// RecordVersionFor). Replaying the result on an empty image gives an
// image equal to this one. It is meant for snapshots.
func (m *Image) Records() []Record {
	mv := m.MetadataVersion()
	var out []Record

	// FeaturesImage.write
	if l, ok := m.features[MetadataVersionFeature]; ok {
		out = append(out, &FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: l})
	}
	for _, name := range slices.Sorted(maps.Keys(m.features)) {
		if name != MetadataVersionFeature {
			out = append(out, &FeatureLevelRecord{Name: name, FeatureLevel: m.features[name]})
		}
	}
	if m.zkMigrationState != 0 {
		out = append(out, &ZkMigrationStateRecord{ZkMigrationState: m.zkMigrationState})
	}

	// ClusterImage.write
	for _, b := range m.Brokers() {
		r := &RegisterBrokerRecord{
			BrokerID:             b.ID,
			IsMigratingZkBroker:  b.IsMigratingZkBroker,
			IncarnationID:        b.IncarnationID,
			BrokerEpoch:          b.Epoch,
			EndPoints:            endpointsToRecord(b.Listeners),
			Features:             featuresToRecord(b.SupportedFeatures),
			Rack:                 b.Rack,
			Fenced:               b.Fenced,
			InControlledShutdown: b.InControlledShutdown,
			LogDirs:              b.Directories,
		}
		r.SetVersion(RecordVersionFor(KeyRegisterBroker, mv))
		out = append(out, r)
	}
	for _, c := range m.Controllers() {
		out = append(out, &RegisterControllerRecord{
			ControllerID:     c.ID,
			IncarnationID:    c.IncarnationID,
			ZkMigrationReady: c.ZkMigrationReady,
			EndPoints:        endpointsToRecord(c.Listeners),
			Features:         featuresToRecord(c.SupportedFeatures),
		})
	}

	// TopicsImage.write
	pv := RecordVersionFor(KeyPartition, mv)
	for _, t := range m.Topics() {
		out = append(out, &TopicRecord{Name: t.Name, TopicID: t.ID})
		for _, p := range t.SortedPartitions() {
			r := &PartitionRecord{
				PartitionID:         p.ID,
				TopicID:             t.ID,
				Replicas:            p.Replicas,
				Isr:                 p.Isr,
				RemovingReplicas:    p.RemovingReplicas,
				AddingReplicas:      p.AddingReplicas,
				Leader:              p.Leader,
				LeaderRecoveryState: p.LeaderRecoveryState,
				LeaderEpoch:         p.LeaderEpoch,
				PartitionEpoch:      p.PartitionEpoch,
				Directories:         p.Directories,
			}
			// PartitionRegistration.toRecord writes the ELR fields only when non-empty.
			if len(p.Elr) > 0 {
				r.EligibleLeaderReplicas = p.Elr
			}
			if len(p.LastKnownElr) > 0 {
				r.LastKnownElr = p.LastKnownElr
			}
			r.SetVersion(pv)
			out = append(out, r)
		}
	}

	// ConfigurationsImage.write
	for _, res := range m.ConfigResources() {
		cfg := m.configs[res]
		for _, name := range slices.Sorted(maps.Keys(cfg)) {
			v := cfg[name]
			out = append(out, &ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: name, Value: &v})
		}
	}

	// ClientQuotasImage.write
	for _, q := range m.ClientQuotas() {
		ent := make([]ClientQuotaEntityData, len(q.Entity))
		for i, e := range q.Entity {
			ent[i] = ClientQuotaEntityData{EntityType: e.Type, EntityName: e.Name}
		}
		for _, k := range slices.Sorted(maps.Keys(q.Values)) {
			out = append(out, &ClientQuotaRecord{Entity: ent, QuotaKey: k, Value: q.Values[k]})
		}
	}

	// ProducerIdsImage.write
	if m.producerIDs.NextProducerID >= 0 {
		p := m.producerIDs
		out = append(out, &ProducerIdsRecord{BrokerID: p.BrokerID, BrokerEpoch: p.BrokerEpoch, NextProducerID: p.NextProducerID})
	}
	return out
}

func endpointsToRecord(eps []Endpoint) []BrokerEndpoint {
	out := make([]BrokerEndpoint, len(eps))
	for i, e := range eps {
		out[i] = BrokerEndpoint{Name: e.Name, Host: e.Host, Port: e.Port, SecurityProtocol: e.SecurityProtocol}
	}
	return out
}

func featuresToRecord(fs map[string]FeatureRange) []BrokerFeature {
	out := make([]BrokerFeature, 0, len(fs))
	for _, name := range slices.Sorted(maps.Keys(fs)) {
		out = append(out, BrokerFeature{Name: name, MinSupportedVersion: fs[name].Min, MaxSupportedVersion: fs[name].Max})
	}
	return out
}
