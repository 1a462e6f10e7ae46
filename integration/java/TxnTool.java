// TxnTool: Apache Kafka's own Java clients driving transactions, for the
// integration tests (integration/txn_*_test.go). Compiled at test time with
// javac against the Kafka jars that scripts/install-tools.sh cached (see
// integration/txn_helpers_test.go); not part of the product.
//
//   java -cp <classes>:<libs>/* TxnTool <command> bootstrap=host:port key=value...
//
// Options without a dot are the tool's own; "p.<key>=v" and "c.<key>=v" are
// passed to the producer and the consumer as client configs. Every command
// prints one JSON object per line on stdout (the tests parse them; anything
// else, such as the clients' logs, goes to stderr) and ends with
// {"event":"done"} or, on any exception, {"event":"error",...} and exit 1.
// A watchdog (deadline.ms, default 90000) prints {"event":"deadline"} and
// halts with exit 3, so that no run outlives its test.
//
// Commands:
//   produce  topic txnid plan=CAC per=N [partitions=P]
//            one transaction per letter of plan: C commits, A aborts; each
//            holds per records, keyed <txnid>-<txn>-<seq>, value
//            txn=<txn>;seq=<seq>;plan=<C|A>, spread over P partitions.
//   consume  topic isolation=read_committed|read_uncommitted
//            assigns every partition, reads from the start up to the end
//            offsets taken first (the last stable offset under
//            read_committed), prints each record and each partition's end.
//   ctp      in out group txnid [batch=N] [abort=i,j]
//            consume-transform-produce: reads in (read_committed, group
//            offsets), writes each record to out with value
//            from=<partition>:<offset>;<value>, and commits the group's
//            offsets with sendOffsetsToTransaction. The transactions listed
//            in abort are aborted once (after their records and offsets were
//            sent) and then retried from the group's committed offsets. Ends
//            when the committed offsets reach in's end offsets.
//   fence    topic txnid
//            producer A begins and writes; producer B (same transactional.id)
//            initTransactions; A's next send and commit report what they
//            throw; B then commits a transaction of its own.
//   timeout  topic txnid txntimeout=MS
//            begins, writes one record, prints {"event":"sent"}, then stalls
//            until a line arrives on stdin; then sends and commits, and
//            reports what each throws.
//   hang     topic txnid [txntimeout=MS]
//            begins, writes one record, prints its offset, and halts the JVM
//            without ending the transaction.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public final class TxnTool {
    private final Map<String, String> opts = new HashMap<>();
    private final Properties producerProps = new Properties();
    private final Properties consumerProps = new Properties();

    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: TxnTool <produce|consume|ctp|fence|timeout|hang> key=value...");
            System.exit(2);
        }
        TxnTool tool = new TxnTool();
        try {
            tool.parse(args);
            tool.watchdog(Long.parseLong(tool.opts.getOrDefault("deadline.ms", "90000")));
            switch (args[0]) {
                case "produce" -> tool.produce();
                case "consume" -> tool.consume();
                case "ctp" -> tool.ctp();
                case "fence" -> tool.fence();
                case "timeout" -> tool.timeout();
                case "hang" -> tool.hang();
                default -> throw new IllegalArgumentException("unknown command " + args[0]);
            }
            emit("event", "done");
            System.out.flush();
            System.exit(0);
        } catch (Throwable e) {
            emitError("main", e);
            System.out.flush();
            System.exit(1);
        }
    }

    private void parse(String[] args) {
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("argument " + args[i] + " is not key=value");
            }
            String k = args[i].substring(0, eq), v = args[i].substring(eq + 1);
            if (k.startsWith("p.")) {
                producerProps.put(k.substring(2), v);
            } else if (k.startsWith("c.")) {
                consumerProps.put(k.substring(2), v);
            } else {
                opts.put(k, v);
            }
        }
    }

    private String opt(String k) {
        String v = opts.get(k);
        if (v == null) {
            throw new IllegalArgumentException("missing option " + k + "=");
        }
        return v;
    }

    private void watchdog(long ms) {
        Thread t = new Thread(() -> {
            try {
                Thread.sleep(ms);
            } catch (InterruptedException e) {
                return;
            }
            emit("event", "deadline", "ms", ms);
            System.out.flush();
            Runtime.getRuntime().halt(3);
        }, "txntool-watchdog");
        t.setDaemon(true);
        t.start();
    }

    // ---------------------------------------------------------------- clients

    // Bounded timeouts everywhere: against a broker without transactions a
    // call must fail within seconds, not block for the clients' defaults.
    private KafkaProducer<String, String> producer(String txnId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, opt("bootstrap"));
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, txnId);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        if (opts.containsKey("txntimeout")) {
            p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, opts.get("txntimeout"));
        }
        p.putAll(producerProps);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    private KafkaConsumer<String, String> consumer(String isolation, String group) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opt("bootstrap"));
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "20000");
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ConsumerConfig.RETRY_BACKOFF_MS_CONFIG, "50");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        p.putAll(consumerProps);
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    private static List<TopicPartition> partitionsOf(KafkaConsumer<?, ?> c, String topic) {
        List<PartitionInfo> infos = c.partitionsFor(topic, Duration.ofSeconds(20));
        if (infos == null || infos.isEmpty()) {
            throw new IllegalStateException("no partitions for topic " + topic);
        }
        List<TopicPartition> tps = new ArrayList<>();
        for (PartitionInfo pi : infos) {
            tps.add(new TopicPartition(topic, pi.partition()));
        }
        tps.sort((a, b) -> Integer.compare(a.partition(), b.partition()));
        return tps;
    }

    // ---------------------------------------------------------------- commands

    private void produce() throws Exception {
        String topic = opt("topic"), txnId = opt("txnid"), plan = opts.getOrDefault("plan", "C");
        int per = Integer.parseInt(opts.getOrDefault("per", "5"));
        int partitions = Integer.parseInt(opts.getOrDefault("partitions", "1"));
        try (KafkaProducer<String, String> p = producer(txnId)) {
            p.initTransactions();
            emit("event", "init");
            for (int txn = 0; txn < plan.length(); txn++) {
                char what = plan.charAt(txn);
                p.beginTransaction();
                List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
                for (int seq = 0; seq < per; seq++) {
                    String key = txnId + "-" + txn + "-" + seq;
                    String value = "txn=" + txn + ";seq=" + seq + ";plan=" + what;
                    fs.add(p.send(new ProducerRecord<>(topic, seq % partitions, key, value)));
                }
                p.flush();
                List<String> offsets = new ArrayList<>();
                for (var f : fs) {
                    RecordMetadata md = f.get();
                    offsets.add(md.partition() + ":" + md.offset());
                }
                if (what == 'A') {
                    p.abortTransaction();
                } else {
                    p.commitTransaction();
                }
                emit("event", "txn", "txn", txn, "outcome", what == 'A' ? "abort" : "commit", "n", per, "offsets", offsets);
            }
        }
    }

    private void consume() {
        String topic = opt("topic"), isolation = opts.getOrDefault("isolation", "read_committed");
        try (KafkaConsumer<String, String> c = consumer(isolation, null)) {
            List<TopicPartition> tps = partitionsOf(c, topic);
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(20));
            for (TopicPartition tp : tps) {
                emit("event", "endOffset", "partition", tp.partition(), "offset", end.get(tp), "isolation", isolation);
            }
            while (true) {
                boolean caughtUp = true;
                for (TopicPartition tp : tps) {
                    if (c.position(tp) < end.get(tp)) {
                        caughtUp = false;
                    }
                }
                if (caughtUp) {
                    break;
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    emit("event", "record", "partition", r.partition(), "offset", r.offset(), "key", r.key(), "value", r.value());
                }
            }
            for (TopicPartition tp : tps) {
                emit("event", "end", "partition", tp.partition(), "position", c.position(tp));
            }
        }
    }

    private void ctp() throws Exception {
        String in = opt("in"), out = opt("out"), group = opt("group"), txnId = opt("txnid");
        Set<Integer> abortOnce = new HashSet<>();
        for (String s : opts.getOrDefault("abort", "").split(",")) {
            if (!s.isEmpty()) {
                abortOnce.add(Integer.parseInt(s));
            }
        }
        consumerProps.putIfAbsent(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, opts.getOrDefault("batch", "20"));
        long committedRecords = 0;
        int txn = 0;
        try (KafkaConsumer<String, String> c = consumer("read_committed", group);
             KafkaProducer<String, String> p = producer(txnId)) {
            p.initTransactions();
            List<TopicPartition> tps = partitionsOf(c, in);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(20));
            c.subscribe(List.of(in)); // a group member: its generation goes into TxnOffsetCommit
            emit("event", "start", "inputEnd", sum(end.values()));
            while (true) {
                Map<TopicPartition, OffsetAndMetadata> committed = c.committed(new HashSet<>(tps), Duration.ofSeconds(20));
                boolean finished = true;
                for (TopicPartition tp : tps) {
                    OffsetAndMetadata om = committed.get(tp);
                    if ((om == null ? 0 : om.offset()) < end.get(tp)) {
                        finished = false;
                    }
                }
                if (finished) {
                    break;
                }
                ConsumerRecords<String, String> recs = c.poll(Duration.ofMillis(200));
                if (recs.isEmpty()) {
                    continue;
                }
                p.beginTransaction();
                Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                for (ConsumerRecord<String, String> r : recs) {
                    String v = "from=" + r.partition() + ":" + r.offset() + ";" + r.value();
                    p.send(new ProducerRecord<>(out, r.key(), v));
                    next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                p.sendOffsetsToTransaction(next, c.groupMetadata());
                if (abortOnce.remove(txn)) {
                    p.flush(); // the records are in the log, then aborted
                    p.abortTransaction();
                    emit("event", "abort", "txn", txn, "n", recs.count());
                    // Retry from the group's committed offsets (the aborted
                    // transaction's offsets never took effect).
                    Map<TopicPartition, OffsetAndMetadata> back = c.committed(new HashSet<>(tps), Duration.ofSeconds(20));
                    for (TopicPartition tp : c.assignment()) {
                        OffsetAndMetadata om = back.get(tp);
                        if (om != null) {
                            c.seek(tp, om);
                        } else {
                            c.seekToBeginning(List.of(tp));
                        }
                    }
                } else {
                    p.commitTransaction();
                    committedRecords += recs.count();
                    emit("event", "commit", "txn", txn, "n", recs.count());
                }
                txn++;
            }
            emit("event", "finished", "committedRecords", committedRecords, "transactions", txn);
        }
    }

    private void fence() throws Exception {
        String topic = opt("topic"), txnId = opt("txnid");
        try (KafkaProducer<String, String> a = producer(txnId)) {
            a.initTransactions();
            a.beginTransaction();
            RecordMetadata md = a.send(new ProducerRecord<>(topic, "a-0", "producer=A;seq=0")).get();
            emit("event", "aSent", "offset", md.offset());
            try (KafkaProducer<String, String> b = producer(txnId)) {
                b.initTransactions();
                emit("event", "bInit");
                try {
                    a.send(new ProducerRecord<>(topic, "a-1", "producer=A;seq=1")).get();
                    emit("event", "aSendOk");
                } catch (Throwable e) {
                    emitError("aSend", e);
                }
                try {
                    a.commitTransaction();
                    emit("event", "aCommitOk");
                } catch (Throwable e) {
                    emitError("aCommit", e);
                }
                b.beginTransaction();
                md = b.send(new ProducerRecord<>(topic, "b-0", "producer=B;seq=0")).get();
                b.commitTransaction();
                emit("event", "bCommitted", "offset", md.offset());
            }
        }
    }

    private void timeout() throws Exception {
        String topic = opt("topic"), txnId = opt("txnid");
        opt("txntimeout");
        try (KafkaProducer<String, String> p = producer(txnId)) {
            p.initTransactions();
            p.beginTransaction();
            RecordMetadata md = p.send(new ProducerRecord<>(topic, "t-0", "timeout;seq=0")).get();
            emit("event", "sent", "offset", md.offset());
            System.out.flush();
            // Stall until the test has seen the broker abort the transaction.
            String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            emit("event", "resumed", "stdin", line);
            try {
                p.send(new ProducerRecord<>(topic, "t-1", "timeout;seq=1")).get();
                emit("event", "sendOk");
            } catch (Throwable e) {
                emitError("send", e);
            }
            try {
                p.commitTransaction();
                emit("event", "commitOk");
            } catch (Throwable e) {
                emitError("commit", e);
            }
        }
    }

    private void hang() throws Exception {
        String topic = opt("topic"), txnId = opt("txnid");
        int partition = Integer.parseInt(opts.getOrDefault("partition", "0"));
        KafkaProducer<String, String> p = producer(txnId);
        p.initTransactions();
        p.beginTransaction();
        RecordMetadata md = p.send(new ProducerRecord<>(topic, partition, "h-0", "hang;seq=0")).get();
        emit("event", "sent", "partition", md.partition(), "offset", md.offset());
        emit("event", "done");
        System.out.flush();
        Runtime.getRuntime().halt(0); // no commit, no abort, no close
    }

    // ---------------------------------------------------------------- output

    private static long sum(Collection<Long> vs) {
        long n = 0;
        for (long v : vs) {
            n += v;
        }
        return n;
    }

    static void emitError(String op, Throwable e) {
        Throwable root = e;
        if (e instanceof ExecutionException && e.getCause() != null) {
            root = e.getCause();
        }
        Throwable cause = root.getCause();
        emit("event", "error", "op", op,
            "exception", root.getClass().getName(),
            "message", String.valueOf(root.getMessage()),
            "cause", cause == null ? "" : cause.getClass().getName(),
            "causeMessage", cause == null ? "" : String.valueOf(cause.getMessage()));
    }

    /** emit prints one JSON object of the given key, value pairs. */
    static synchronized void emit(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i + 1 < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        StringBuilder sb = new StringBuilder();
        json(sb, m);
        System.out.println(sb);
    }

    static void json(StringBuilder sb, Object v) {
        if (v == null) {
            sb.append("null");
        } else if (v instanceof Number || v instanceof Boolean) {
            sb.append(v);
        } else if (v instanceof Map<?, ?> m) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                json(sb, String.valueOf(e.getKey()));
                sb.append(':');
                json(sb, e.getValue());
            }
            sb.append('}');
        } else if (v instanceof Collection<?> c) {
            sb.append('[');
            boolean first = true;
            for (Object o : c) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                json(sb, o);
            }
            sb.append(']');
        } else {
            String s = v.toString();
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char ch = s.charAt(i);
                switch (ch) {
                    case '"' -> sb.append("\\\"");
                    case '\\' -> sb.append("\\\\");
                    case '\n' -> sb.append("\\n");
                    case '\r' -> sb.append("\\r");
                    case '\t' -> sb.append("\\t");
                    default -> {
                        if (ch < 0x20) {
                            sb.append(String.format("\\u%04x", (int) ch));
                        } else {
                            sb.append(ch);
                        }
                    }
                }
            }
            sb.append('"');
        }
    }
}
