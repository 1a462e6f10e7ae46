// StreamsCount: a Kafka Streams 4.4 application with
// processing.guarantee=exactly_once_v2, for integration/streams_test.go.
// Compiled at test time like TxnTool.java; not part of the product.
//
//   java -cp <classes>:<libs>/* StreamsCount bootstrap=host:port app=ID in=T out=T state=DIR
//        [protocol=classic|streams] [s.<StreamsConfig key>=<value> ...]
//
// protocol=streams runs the app in a KIP-1071 streams group (the broker
// assigns the tasks and creates the internal topics); the default is the
// classic protocol. s.<key>=<value> sets any other StreamsConfig (for
// example s.client.id=..., s.application.server=host:port).
//
// The topology re-keys every input record by its value (a word), which
// makes Streams repartition through an internal topic, and counts per word
// in a persistent (RocksDB, changelogged) store:
//
//   in (any key, value=word) -> groupBy(value) -> repartition -> count() -> out (word, count)
//
// The record cache is off (statestore.cache.max.bytes=0), so every input
// record produces one output update: under exactly-once, the committed
// updates of a word are 1, 2, ..., n with no repeat and no gap, whatever
// crashed in between. Lines on stdout are JSON: {"event":"state",...} on each
// state change, {"event":"error",...} from the uncaught-exception handler.
// The thread is replaced on an uncaught exception (so a broker restart does not
// end the run); the JVM runs until killed or SIGTERM (closes cleanly).

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

public final class StreamsCount {
    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        Properties extra = new Properties();
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("argument " + a + " is not key=value");
            }
            String k = a.substring(0, eq), v = a.substring(eq + 1);
            if (k.startsWith("s.")) {
                extra.put(k.substring(2), v);
            } else {
                o.put(k, v);
            }
        }
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, req(o, "app"));
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, req(o, "bootstrap"));
        p.put(StreamsConfig.STATE_DIR_CONFIG, req(o, "state"));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, o.getOrDefault("protocol", "classic"));
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, o.getOrDefault("rf", "1"));
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        // A dead instance's member leaves the group after 6s (the brokers'
        // group.min.session.timeout.ms), so that a restarted one takes over quickly.
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "6000");
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1000");
        p.put(StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG), "10000");
        p.put(StreamsConfig.producerPrefix(ProducerConfig.MAX_BLOCK_MS_CONFIG), "20000");
        p.put(StreamsConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.putAll(extra);

        StreamsBuilder b = new StreamsBuilder();
        b.stream(req(o, "in"), Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((k, v) -> v, Grouped.with("by-word", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
            .toStream()
            .map((word, n) -> KeyValue.pair(word, String.valueOf(n)))
            .to(req(o, "out"), Produced.with(Serdes.String(), Serdes.String()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        streams.setStateListener((now, before) ->
            TxnTool.emit("event", "state", "state", now.toString(), "before", before.toString()));
        streams.setUncaughtExceptionHandler(e -> {
            TxnTool.emitError("streams", e);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            streams.close(Duration.ofSeconds(20));
            TxnTool.emit("event", "closed");
            System.out.flush();
            closed.countDown();
        }, "streams-shutdown"));
        streams.start();
        TxnTool.emit("event", "started");
        closed.await();
    }

    private static String req(Map<String, String> o, String k) {
        String v = o.get(k);
        if (v == null) {
            throw new IllegalArgumentException("missing option " + k + "=");
        }
        return v;
    }
}
