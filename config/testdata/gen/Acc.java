import java.util.*; import java.nio.file.*;
import kafka.server.KafkaConfig;
public class Acc { public static void main(String[] a) throws Exception {
  List<String> names = new ArrayList<>();
  for (String l : Files.readAllLines(Path.of("broker.tsv"))) names.add(l.split("\t")[0]);
  String[] vals = {"", "-1", "0", "abc", "-2", "1", "true", " 5 ", "2147483648", "0.5", "PLAINTEXT://:9092"};
  StringBuilder out = new StringBuilder();
  for (String n : names) for (String v : vals) {
    Properties p = new Properties();
    p.put("process.roles","broker,controller"); p.put("node.id","1"); p.put("controller.quorum.voters","1@localhost:9093");
    p.put("listeners","PLAINTEXT://:9092,CONTROLLER://:9093"); p.put("advertised.listeners","PLAINTEXT://localhost:9092");
    p.put("controller.listener.names","CONTROLLER"); p.put("log.dirs","/tmp/x"); p.put(n, v);
    String r;
    try { KafkaConfig.fromProps(p, false); r = "OK"; } catch (Throwable e) { r = "ERR " + String.valueOf(e.getMessage()).replace("\n"," "); }
    out.append(n).append("\t").append(v).append("\t").append(r).append("\n");
  }
  Files.writeString(Path.of("acc.txt"), out.toString());
}}
