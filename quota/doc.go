// Package quota is Kafka's client quotas and connection limits, without the
// sockets: the broker records what a request used and is told how long to
// throttle the client; the listeners ask whether a new connection may be
// served. It imports no other project package; time is a millisecond clock
// the caller injects (tests drive it by hand).
//
//	produce/fetch bytes ──► ClientManager (byte rate)       ─┐
//	request handler time ─► ClientManager (request %)        ├─► throttle ms
//	CreateTopics & co. ───► ClientManager (token bucket) ────┘   (THROTTLING_QUOTA_EXCEEDED
//	                                                              when strict)
//	accepted connection ──► ConnectionQuotas ─► serve / close now / close later / wait
//
// # Rates and windows (Kafka's Rate over a SampledStat, WindowedSum)
//
// A Rate keeps up to samples+1 samples (quota.window.num, default 11), each
// covering quota.window.size.seconds (default 1 s). Recording adds to the
// current sample, starting a new one when the current is a window old. A
// sample whose last event is samples*window old is reset when the rate is
// read. The rate is the sum of the samples over the elapsed time since the
// oldest sample started, where the elapsed time is padded up to samples-1
// full windows (so a burst on an idle client is averaged over ~10 s, not
// over the few ms it took) and is at least 1 ms.
//
// # Throttle time (QuotaUtils.throttleTime, KIP-219)
//
// When the rate O after recording exceeds the bound T, the client is
// throttled for X = (O - T) / T * W ms, rounded, where W is the window
// size above: the delay after which the average is back at T if nothing
// more is recorded. The request quota caps X at one window (ClientRequestQuotaManager).
// The controller mutation quota is a token bucket (KIP-599): burst
// samples*window*T tokens, refilled at T per second; a mutation is refused
// while the bucket is negative (strict) and the throttle is -tokens/T s.
//
// # Entities and resolution (ClientQuotaManager's DefaultQuotaCallback)
//
// Quotas are set on (user, client-id), user, or client-id, each either named
// or the default. A request of principal U and client id C uses the most
// specific quota:
//
//	user=U,client-id=C   user=U,client-id=<default>   user=U
//	user=<default>,client-id=C   user=<default>,client-id=<default>   user=<default>
//	client-id=C   client-id=<default>
//
// Clients that resolve to the same quota entity share one rate (the
// sensor's metric tags, as Kafka computes them: with only client-id quotas
// every user of client C shares C's rate). A rate unused for an hour is
// dropped.
//
// # Replication throttles (KIP-73, ReplicationQuotaManager)
//
// A ReplicationQuota is one byte rate (leader, follower or alter-log-dirs
// replication) with a set of throttled partitions. Its rate is Kafka's
// SimpleRate: the samples' sum over the time since the oldest sample
// started, at least one window, without the padding to samples-1 windows
// above; the first look at the quota starts a sample. The replication code
// asks IsThrottled and IsQuotaExceeded before moving a throttled
// partition's bytes and Records what it moved, never refused.
//
// # Locks
//
// A ClientManager has one lock (its quotas and its sensor map; read-held on
// the hot path) and one lock per sensor; the sensor's is taken under the
// manager's read lock, and is a leaf. ConnectionQuotas has one lock, a
// leaf: Admit waits for a free slot without it (on a channel closed when a
// connection is released), and EnforceMax closes connections after
// releasing it. A ReplicationQuota has one lock, a leaf; its throttled set
// is read without it (an atomic pointer to a map replaced whole).
package quota
