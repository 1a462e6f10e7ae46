// ShareTool: Apache Kafka's own KafkaShareConsumer (KIP-932) for the
// integration tests (integration/share_test.go). Compiled at test time with
// javac against the Kafka jars that scripts/install-tools.sh cached (see
// integration/txn_helpers_test.go); not part of the product.
//
//   java -cp <classes>:<libs>/* ShareTool consume bootstrap=host:port key=value...
//
// Options without a dot are the tool's own; "c.<key>=v" are passed to every
// consumer as client configs. Every command prints one JSON object per line
// on stdout (anything else, such as the clients' logs, goes to stderr) and
// ends with {"event":"done"} or, on any exception, {"event":"error",...} and
// exit 1. A watchdog (deadline.ms, default 90000) prints {"event":"deadline"}
// and halts with exit 3, so that no run outlives its test.
//
// Commands:
//   consume  topic group expect=N [consumers=K] [release=i,j] [reject=i,j]
//            [releasealways=i,j] [idle.ms=M] [stopat=S]
//            K share consumers (threads, one group, explicit acknowledgement
//            mode) poll topic. Records carry values "v<i>"; a record whose i
//            is in release is released on its first delivery (and accepted
//            when it comes back), in reject rejected, in releasealways
//            released on every delivery (the broker archives it at the
//            delivery count limit); every other record is accepted. Each
//            delivery prints {"event":"record","consumer":c,"partition":p,
//            "offset":o,"delivery":d,"value":v,"ack":a}; each commit with a
//            failed partition prints {"event":"commit-error",...}. The run
//            ends once N distinct values have been accepted or rejected and
//            then nothing more arrived for idle.ms (default 3000): what a
//            consumer sees after the end (a redelivery that should not
//            happen) is printed too. With stopat, the run ends as soon as S
//            values are done (the consumers close, releasing what they hold).

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public final class ShareTool {
    private final Map<String, String> opts = new HashMap<>();
    private final Properties consumerProps = new Properties();

    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: ShareTool <command> key=value...");
            System.exit(2);
        }
        ShareTool tool = new ShareTool();
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq < 0) {
                System.err.println("bad argument " + args[i]);
                System.exit(2);
            }
            String k = args[i].substring(0, eq), v = args[i].substring(eq + 1);
            if (k.startsWith("c.")) {
                tool.consumerProps.put(k.substring(2), v);
            } else {
                tool.opts.put(k, v);
            }
        }
        long deadline = Long.parseLong(tool.opts.getOrDefault("deadline.ms", "90000"));
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(deadline);
            } catch (InterruptedException e) {
                return;
            }
            emit("deadline", "ms", deadline);
            System.out.flush();
            Runtime.getRuntime().halt(3);
        });
        watchdog.setDaemon(true);
        watchdog.start();
        try {
            switch (args[0]) {
                case "consume":
                    tool.consume();
                    break;
                default:
                    throw new IllegalArgumentException("unknown command " + args[0]);
            }
            emit("done");
            System.out.flush();
            System.exit(0);
        } catch (Throwable e) {
            emit("error", "class", e.getClass().getName(), "message", String.valueOf(e.getMessage()));
            e.printStackTrace();
            System.out.flush();
            System.exit(1);
        }
    }

    private String opt(String k) {
        String v = opts.get(k);
        if (v == null) {
            throw new IllegalArgumentException("missing option " + k);
        }
        return v;
    }

    private Set<Integer> intSet(String k) {
        Set<Integer> out = new HashSet<>();
        String v = opts.getOrDefault(k, "");
        for (String s : v.split(",")) {
            if (!s.isEmpty()) {
                out.add(Integer.parseInt(s));
            }
        }
        return out;
    }

    private void consume() throws Exception {
        String topic = opt("topic"), group = opt("group");
        int expect = Integer.parseInt(opt("expect"));
        int consumers = Integer.parseInt(opts.getOrDefault("consumers", "1"));
        long idleMs = Long.parseLong(opts.getOrDefault("idle.ms", "3000"));
        int stopAt = Integer.parseInt(opts.getOrDefault("stopat", "-1"));
        Set<Integer> release = intSet("release"), reject = intSet("reject"), releaseAlways = intSet("releasealways");

        // The values that reached their end (accepted or rejected), and when
        // anything last arrived.
        Set<String> done = ConcurrentHashMap.newKeySet();
        Set<String> releasedOnce = ConcurrentHashMap.newKeySet();
        AtomicLong lastActivity = new AtomicLong(System.currentTimeMillis());
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new ArrayList<>();
        for (int c = 0; c < consumers; c++) {
            final int id = c;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opt("bootstrap"));
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, "share-tool-" + id);
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, "explicit");
            p.putAll(consumerProps);
            Thread t = new Thread(() -> {
                try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(p)) {
                    consumer.subscribe(List.of(topic));
                    while (!stop.get()) {
                        if (stopAt >= 0 && done.size() >= stopAt) {
                            break; // close now: what is acquired and not acknowledged is released
                        }
                        ConsumerRecords<String, String> recs = consumer.poll(Duration.ofMillis(200));
                        for (ConsumerRecord<String, String> r : recs) {
                            lastActivity.set(System.currentTimeMillis());
                            String v = r.value();
                            int i = v != null && v.startsWith("v") ? Integer.parseInt(v.substring(1)) : -1;
                            AcknowledgeType ack;
                            if (releaseAlways.contains(i)) {
                                ack = AcknowledgeType.RELEASE;
                            } else if (release.contains(i) && releasedOnce.add(v)) {
                                ack = AcknowledgeType.RELEASE;
                            } else if (reject.contains(i)) {
                                ack = AcknowledgeType.REJECT;
                            } else {
                                ack = AcknowledgeType.ACCEPT;
                            }
                            consumer.acknowledge(r, ack);
                            Optional<Short> delivery = r.deliveryCount();
                            emit("record", "consumer", id, "partition", r.partition(), "offset", r.offset(),
                                "delivery", delivery.isPresent() ? (int) delivery.get() : -1, "value", v, "ack", ack.name());
                        }
                        if (!recs.isEmpty()) {
                            Map<TopicIdPartition, Optional<KafkaException>> res = consumer.commitSync();
                            for (Map.Entry<TopicIdPartition, Optional<KafkaException>> e : res.entrySet()) {
                                if (e.getValue().isPresent()) {
                                    emit("commit-error", "consumer", id, "partition", e.getKey().partition(),
                                        "class", e.getValue().get().getClass().getName(), "message", String.valueOf(e.getValue().get().getMessage()));
                                }
                            }
                            // A value is done once its accept or reject was committed.
                            for (ConsumerRecord<String, String> r : recs) {
                                String v = r.value();
                                int i = v != null && v.startsWith("v") ? Integer.parseInt(v.substring(1)) : -1;
                                if (!releaseAlways.contains(i) && !(release.contains(i) && r.deliveryCount().orElse((short) 1) < 2)) {
                                    done.add(v);
                                }
                            }
                        }
                    }
                } catch (Throwable e) {
                    synchronized (failures) {
                        failures.add(e);
                    }
                    stop.set(true);
                }
            }, "share-consumer-" + id);
            threads.add(t);
            t.start();
        }
        while (!stop.get()) {
            Thread.sleep(50);
            if (stopAt >= 0 && done.size() >= stopAt) {
                break;
            }
            if (done.size() >= expect && System.currentTimeMillis() - lastActivity.get() >= idleMs) {
                break;
            }
        }
        stop.set(true);
        for (Thread t : threads) {
            t.join();
        }
        synchronized (failures) {
            if (!failures.isEmpty()) {
                Throwable e = failures.get(0);
                throw new RuntimeException("consumer failed: " + e, e);
            }
        }
        emit("finished", "values", done.size());
    }

    private static synchronized void emit(String event, Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", event);
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put(String.valueOf(kv[i]), kv[i + 1]);
        }
        StringBuilder sb = new StringBuilder("{");
        boolean first = true;
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (!first) {
                sb.append(',');
            }
            first = false;
            sb.append('"').append(e.getKey()).append("\":");
            Object v = e.getValue();
            if (v instanceof Number) {
                sb.append(v);
            } else {
                sb.append('"').append(String.valueOf(v).replace("\\", "\\\\").replace("\"", "\\\"")).append('"');
            }
        }
        System.out.println(sb.append('}'));
    }
}
