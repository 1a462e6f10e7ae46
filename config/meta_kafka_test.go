package config

import "testing"

// TestKafkaMeta: the key tables carry Kafka 4.4's internal and dynamic
// flags and documentation (kafka_config_meta.json, scripts/gen-config-meta).
func TestKafkaMeta(t *testing.T) {
	for name, want := range map[string]struct{ internal, dynamic bool }{
		"internal.metadata.log.segment.bytes": {internal: true},
		"unstable.api.versions.enable":        {internal: true},
		"server.max.startup.time.ms":          {internal: true},
		"log.retention.ms":                    {dynamic: true},
		"log.cleaner.threads":                 {dynamic: true},
		"node.id":                             {},
		"listeners":                           {dynamic: true}, // listeners can be added dynamically
	} {
		k, ok := Lookup(name)
		if !ok || k.Internal != want.internal || k.Dynamic != want.dynamic {
			t.Errorf("%s: internal %v dynamic %v, want %+v", name, k.Internal, k.Dynamic, want)
		}
	}
	internal := 0
	for _, k := range Keys() {
		if k.Internal {
			internal++
		} else if k.Doc == "" {
			t.Errorf("%s has no documentation", k.Name)
		}
	}
	if internal != 29 {
		t.Errorf("%d internal broker keys, Kafka 4.4 has 29", internal)
	}
	for _, tk := range TopicKeys() {
		if tk.Doc == "" {
			t.Errorf("topic key %s has no documentation", tk.Name)
		}
	}
}
