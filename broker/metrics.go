package broker

// Prometheus metrics of a node, named after Kafka's JMX MBeans as the
// Prometheus JMX exporter renders them: lowercase kafka_<domain>_<type>_<name>
// (kafka.server:type=ReplicaManager,name=LeaderCount becomes
// kafka_server_replicamanager_leadercount). cmd/kgo-broker serves them on
// KGO_METRICS_ADDR; there is no Kafka config key for it.
//
// Most metrics are pulled: nodeCollector's Collect reads the current state
// through the rooms' read-only methods when scraped, so produce and fetch pay
// nothing for them. What must be counted as it happens is counted with
// atomics: requests and their times (protocol.Server.Observe, only with
// NodeConfig.Metrics), produced records and bytes (replication), fetched bytes
// (Broker.bytesOut).

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/quota"
)

// maxMetricVersion bounds the versions given their own requests_total series;
// a higher one (none is served today) is counted under the last slot's label.
const maxMetricVersion = 32

// requestMetrics is kafka.network:type=RequestMetrics: RequestsPerSec
// {request,version} and TotalTimeMs{request}. Series are created on a key's
// (and version's) first request, so the output lists only APIs in use, and
// kept in arrays indexed by key so that observing one is two atomic loads and
// the metric's own atomic updates: no map, no label lookup, no allocation.
type requestMetrics struct {
	requests  *prometheus.CounterVec
	totalTime *prometheus.HistogramVec

	counters [kmsg.MaxKey + 1][maxMetricVersion]atomic.Pointer[prometheus.Counter]
	times    [kmsg.MaxKey + 1]atomic.Pointer[prometheus.Observer]
}

func newRequestMetrics() *requestMetrics {
	return &requestMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kafka_network_requestmetrics_requests_total",
			Help: "Requests served, by API and version (kafka.network:type=RequestMetrics,name=RequestsPerSec).",
		}, []string{"request", "version"}),
		totalTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "kafka_network_requestmetrics_totaltimems",
			Help: "Time from dequeuing a request to having written its response, in ms, by API " +
				"(kafka.network:type=RequestMetrics,name=TotalTimeMs; without the time queued).",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000},
		}, []string{"request"}),
	}
}

// observe is protocol.Server.Observe.
func (m *requestMetrics) observe(key, version int16, d time.Duration) {
	if key < 0 || int(key) > kmsg.MaxKey || version < 0 {
		return
	}
	v := min(int(version), maxMetricVersion-1)
	c := m.counters[key][v].Load()
	if c == nil {
		c = m.resolveCounter(key, v)
	}
	(*c).Inc()
	o := m.times[key].Load()
	if o == nil {
		o = m.resolveTime(key)
	}
	(*o).Observe(float64(d) / float64(time.Millisecond))
}

// resolveCounter creates (once per key and version; a race creates the same
// child twice, which is harmless) the series of a key's version.
func (m *requestMetrics) resolveCounter(key int16, v int) *prometheus.Counter {
	c := m.requests.WithLabelValues(kmsg.NameForKey(key), strconv.Itoa(v))
	m.counters[key][v].Store(&c)
	return &c
}

func (m *requestMetrics) resolveTime(key int16) *prometheus.Observer {
	o := m.totalTime.WithLabelValues(kmsg.NameForKey(key))
	m.times[key].Store(&o)
	return &o
}

// nodeCollector reads a node's state when scraped. It reads nothing until the
// node has started (Node.started), since Start fills the node's fields.
type nodeCollector struct{ n *Node }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	// kafka.server:type=BrokerTopicMetrics (all topics)
	descMessagesIn = desc("kafka_server_brokertopicmetrics_messagesin_total",
		"Records appended by produce requests, all topics (BrokerTopicMetrics MessagesInPerSec).")
	descBytesIn = desc("kafka_server_brokertopicmetrics_bytesin_total",
		"Record batch bytes appended by produce requests, all topics (BrokerTopicMetrics BytesInPerSec).")
	descBytesOut = desc("kafka_server_brokertopicmetrics_bytesout_total",
		"Record bytes sent to consumers in fetch responses, all topics; follower fetches excluded as in Kafka (BrokerTopicMetrics BytesOutPerSec).")

	// kafka.server:type=ReplicaManager
	descPartitionCount = desc("kafka_server_replicamanager_partitioncount",
		"Partitions this broker holds a replica of (ReplicaManager PartitionCount).")
	descLeaderCount = desc("kafka_server_replicamanager_leadercount",
		"Partitions this broker leads (ReplicaManager LeaderCount).")
	descUnderReplicated = desc("kafka_server_replicamanager_underreplicatedpartitions",
		"Led partitions whose ISR is smaller than their replica set (ReplicaManager UnderReplicatedPartitions).")
	descOfflineReplicas = desc("kafka_server_replicamanager_offlinereplicacount",
		"Replicas whose log dir is offline (ReplicaManager OfflineReplicaCount).")

	// kafka.log:type=LogManager, kafka.log:type=LogCleanerManager
	descOfflineDirs = desc("kafka_log_logmanager_offlinelogdirectorycount",
		"Log dirs taken offline by an I/O error (LogManager OfflineLogDirectoryCount).")
	descUncleanablePartitions = desc("kafka_log_logcleanermanager_uncleanable_partitions_count",
		"Partitions the cleaner marked uncleanable, per log dir (LogCleanerManager uncleanable-partitions-count).", "logdirectory")
	descUncleanableBytes = desc("kafka_log_logcleanermanager_uncleanable_bytes",
		"Bytes the cleaner would clean in uncleanable partitions, per log dir (LogCleanerManager uncleanable-bytes).", "logdirectory")

	// kafka.controller:type=KafkaController, kafka.server:type=raft-metrics
	descActiveController = desc("kafka_controller_kafkacontroller_activecontrollercount",
		"1 on the active controller, else 0; controllers only (KafkaController ActiveControllerCount).")
	descRaftLeader = desc("kafka_server_raftmetrics_current_leader",
		"The metadata quorum's leader id, -1 unknown (raft-metrics current-leader).")
	descRaftEpoch = desc("kafka_server_raftmetrics_current_epoch",
		"The metadata quorum's epoch (raft-metrics current-epoch).")
	descRaftHW = desc("kafka_server_raftmetrics_high_watermark",
		"The metadata log's high watermark, -1 unknown (raft-metrics high-watermark).")

	// kafka.server:type=Produce|Fetch|Request|ControllerMutation, per
	// user and client-id (ClientQuotaManager's sensors; only while a quota
	// of the type is set).
	descQuotaMetrics = [...][2]*prometheus.Desc{
		{desc("kafka_server_produce_byte_rate", "Produce bytes per second, per user/client-id quota entity (Produce byte-rate).", "user", "client_id"),
			desc("kafka_server_produce_throttle_time", "Average produce throttle time in ms, per user/client-id (Produce throttle-time).", "user", "client_id")},
		{desc("kafka_server_fetch_byte_rate", "Fetch bytes per second, per user/client-id quota entity (Fetch byte-rate).", "user", "client_id"),
			desc("kafka_server_fetch_throttle_time", "Average fetch throttle time in ms, per user/client-id (Fetch throttle-time).", "user", "client_id")},
		{desc("kafka_server_request_request_time", "Request handler time in percent of one thread, per user/client-id (Request request-time).", "user", "client_id"),
			desc("kafka_server_request_throttle_time", "Average request-quota throttle time in ms, per user/client-id (Request throttle-time).", "user", "client_id")},
		{desc("kafka_server_controllermutation_mutation_rate", "Partition mutations per second, per user/client-id (ControllerMutation mutation-rate).", "user", "client_id"),
			desc("kafka_server_controllermutation_throttle_time", "Average controller mutation throttle time in ms, per user/client-id (ControllerMutation throttle-time).", "user", "client_id")},
	}
)

// kafka.server:type=LeaderReplication|FollowerReplication|AlterLogDirsReplication
// byte-rate (ReplicationQuotaManager's sensors, replication_quotas.go).
var descReplicationByteRate = [...]*prometheus.Desc{
	desc("kafka_server_leaderreplication_byte_rate", "Bytes per second of throttled partitions sent to followers (LeaderReplication byte-rate)."),
	desc("kafka_server_followerreplication_byte_rate", "Bytes per second of throttled partitions fetched from leaders (FollowerReplication byte-rate)."),
	desc("kafka_server_alterlogdirsreplication_byte_rate", "Bytes per second moved between log dirs (AlterLogDirsReplication byte-rate)."),
}

// Describe implements prometheus.Collector.
func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descMessagesIn, descBytesIn, descBytesOut,
		descPartitionCount, descLeaderCount, descUnderReplicated, descOfflineReplicas,
		descOfflineDirs, descUncleanablePartitions, descUncleanableBytes,
		descActiveController, descRaftLeader, descRaftEpoch, descRaftHW} {
		ch <- d
	}
	for _, d := range descQuotaMetrics {
		ch <- d[0]
		ch <- d[1]
	}
	for _, d := range descReplicationByteRate {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	if !n.started.Load() {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	if n.replicas != nil {
		pt := n.replicas.ProduceTotals()
		counter(descMessagesIn, float64(pt.MessagesIn))
		counter(descBytesIn, float64(pt.BytesIn))
		counter(descBytesOut, float64(n.broker.bytesOut.Load()))
		rc := n.replicas.Counts()
		gauge(descPartitionCount, float64(rc.Partitions))
		gauge(descLeaderCount, float64(rc.Leaders))
		gauge(descUnderReplicated, float64(rc.UnderReplicated))
		gauge(descOfflineReplicas, float64(rc.Offline))
	}
	if n.logs != nil {
		gauge(descOfflineDirs, float64(len(n.logs.OfflineDirs())))
		for dir, s := range n.logs.Uncleanable() {
			gauge(descUncleanablePartitions, float64(s.Partitions), dir)
			gauge(descUncleanableBytes, float64(s.Bytes), dir)
		}
	}
	if n.ctrl != nil {
		active := 0.0
		if n.ctrl.Active() {
			active = 1
		}
		gauge(descActiveController, active)
	}
	if q := n.broker.quotas; q != nil {
		for i, m := range []*quota.ClientManager{q.produce, q.fetch, q.request, q.mutation} {
			for _, st := range m.Stats() {
				gauge(descQuotaMetrics[i][0], st.Rate, st.User, st.ClientID)
				gauge(descQuotaMetrics[i][1], st.ThrottleTimeMs, st.User, st.ClientID)
			}
		}
	}
	if q := n.broker.replQuotas; q != nil {
		for i, rq := range q.all() {
			gauge(descReplicationByteRate[i], rq.Rate())
		}
	}
	if n.raft != nil {
		st := n.raft.Status()
		gauge(descRaftLeader, float64(st.LeaderID))
		gauge(descRaftEpoch, float64(st.Epoch))
		gauge(descRaftHW, float64(st.HighWatermark))
	}
}

// newFlushTime is kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs: the
// time of every log flush, a full one or a group commit round (storage
// ManagerOptions.OnFlush). A clock read per fsync, always on.
func newFlushTime() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "kafka_log_logflushstats_logflushrateandtimems",
		Help:    "Time of each log flush (fsync of segment files: a full flush or a flush.messages group commit round), in ms (LogFlushStats LogFlushRateAndTimeMs).",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000},
	})
}

func (n *Node) observeFlush(d time.Duration) {
	n.flushTime.Observe(float64(d) / float64(time.Millisecond))
}

// newMetricsRegistry builds the node's registry: the node collector, the
// request metrics, the log flush time, and Go's runtime and process collectors.
func newMetricsRegistry(n *Node) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		nodeCollector{n},
		n.requestMetrics.requests,
		n.requestMetrics.totalTime,
		n.flushTime,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return reg
}

// MetricsRegistry is the node's Prometheus registry. Node metrics appear once
// Start has returned; request metrics only with NodeConfig.Metrics.
func (n *Node) MetricsRegistry() *prometheus.Registry { return n.registry }

// MetricsHandler serves MetricsRegistry in Prometheus' exposition format (for
// /metrics).
func (n *Node) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(n.registry, promhttp.HandlerOpts{})
}
