package metadatacache

import (
	"maps"
	"slices"
)

// RecordVersionFor returns the version of a record the active controller
// writes at a metadata.version feature level, as MetadataVersion's
// registerBrokerRecordVersion and partition(Change)RecordVersion decide it.
// For BrokerRegistrationChangeRecord it is the newest version the level
// allows: Kafka writes v0 for fencing, v1 for controlled shutdown, v2 for
// offline log dirs and v3 for cordoned log dirs (ReplicationControlManager),
// each only once the level has it. Level 0 (unknown) returns the newest
// version. Records with a single version return 0.
func RecordVersionFor(key int16, metadataVersion int16) int16 {
	if metadataVersion <= 0 {
		if r := NewRecord(key); r != nil {
			return r.MaxVersion()
		}
		return 0
	}
	mv := metadataVersion
	switch key {
	case KeyRegisterBroker:
		switch {
		case mv >= MV4_3_IV0:
			return 4
		case mv >= MV3_7_IV2:
			return 3
		case mv >= MV3_4_IV0:
			return 2
		case mv >= MV3_3_IV3:
			return 1
		}
	case KeyPartition, KeyPartitionChange:
		switch {
		case mv >= MV4_0_IV1:
			return 2
		case mv >= MV3_7_IV2:
			return 1
		}
	case KeyBrokerRegistrationChange:
		switch {
		case mv >= MV4_3_IV0:
			return 3
		case mv >= MV3_7_IV2:
			return 2
		case mv >= MV3_3_IV3:
			return 1
		}
	}
	return 0
}

// Records writes the image back as metadata records, in the order of
// Kafka's MetadataImage.write: features (metadata.version first), brokers,
// controllers, topics with their partitions, configs, client quotas,
// producer ids, ACLs, SCRAM credentials, delegation tokens. Record versions
// follow the image's metadata.version (see RecordVersionFor); what the
// level cannot carry is left out, as Kafka's ImageWriterOptions.handleLoss
// does (controllers below 3.7-IV0, cordoned dirs below 4.3-IV0, SCRAM below
// 3.5-IV2, delegation tokens below 3.6-IV2). Replaying the result on an
// empty image gives an image equal to this one. It is meant for snapshots.
func (m *Image) Records() []Record {
	mv := m.MetadataVersion()
	// has reports whether the level carries what level lv added; an image
	// without a metadata.version writes everything.
	has := func(lv int16) bool { return mv <= 0 || mv >= lv }
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
		if has(MV4_3_IV0) {
			r.CordonedLogDirs = b.CordonedDirectories
		}
		r.SetVersion(RecordVersionFor(KeyRegisterBroker, mv))
		out = append(out, r)
	}
	for _, c := range m.Controllers() {
		if !has(MV3_7_IV0) {
			break
		}
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

	// AclsImage.write
	for _, a := range m.ACLs() {
		out = append(out, &AccessControlEntryRecord{
			ID: a.ID, ResourceType: a.ResourceType, ResourceName: a.ResourceName, PatternType: a.PatternType,
			Principal: a.Principal, Host: a.Host, Operation: a.Operation, PermissionType: a.PermissionType,
		})
	}

	// ScramImage.write
	if has(MV3_5_IV2) {
		for _, c := range m.ScramCredentials() {
			out = append(out, &UserScramCredentialRecord{
				Name: c.Name, Mechanism: c.Mechanism, Salt: c.Salt, StoredKey: c.StoredKey, ServerKey: c.ServerKey, Iterations: c.Iterations,
			})
		}
	}

	// DelegationTokenImage.write
	if has(MV3_6_IV2) {
		for _, t := range m.DelegationTokens() {
			out = append(out, &DelegationTokenRecord{
				Owner: t.Owner, Requester: t.Requester, Renewers: t.Renewers, IssueTimestamp: t.IssueTimestamp,
				MaxTimestamp: t.MaxTimestamp, ExpirationTimestamp: t.ExpirationTimestamp, TokenID: t.TokenID,
			})
		}
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
