import java.util.*; import java.nio.file.*;
import org.apache.kafka.storage.internals.log.LogConfig;
public class TAcc { public static void main(String[] a) throws Exception {
  String[] vals = {"", "-1", "0", "abc", "-2", "1", "true", "TRUE", " 5 ", "2147483648", "0.5", "1.5", "compact", "delete,compact", "compact,compact", "CreateTime", "zstd", "*", "0:1", "0:1,1:2", "1048576", "-3"};
  StringBuilder out = new StringBuilder();
  List<String> names = new ArrayList<>(LogConfig.configNames()); Collections.sort(names);
  names.add("no.such.config");
  for (String n : names) for (String v : vals) {
    String r;
    try { LogConfig.validate(new HashMap<>(Map.of(n, v))); r = "OK"; } catch (Throwable e) { r = "ERR"; }
    out.append(n).append("\t").append(v).append("\t").append(r).append("\n");
  }
  Files.writeString(Path.of("tacc.tsv"), out.toString());
}}
