import java.util.*; import java.io.*; import java.nio.file.*;
public class Diff { public static void main(String[] a) throws Exception {
  Random r = new Random(7); String alpha = "ab=: \t\\\n\r#!u0E9f\fuu00";
  StringBuilder out = new StringBuilder();
  for (int i = 0; i < 30000; i++) {
    int n = r.nextInt(30); StringBuilder sb = new StringBuilder();
    for (int j = 0; j < n; j++) sb.append(alpha.charAt(r.nextInt(alpha.length())));
    String in = sb.toString(); Properties p = new Properties(); String res;
    try { p.load(new StringReader(in)); TreeMap<String,String> t = new TreeMap<>(); for (String k : p.stringPropertyNames()) t.put(k, p.getProperty(k));
      StringBuilder rs = new StringBuilder(); for (var e : t.entrySet()) rs.append(Base64.getEncoder().encodeToString(e.getKey().getBytes("UTF-8"))).append(":").append(Base64.getEncoder().encodeToString(e.getValue().getBytes("UTF-8"))).append(",");
      res = rs.toString(); } catch (Exception e) { res = "ERR"; }
    out.append(Base64.getEncoder().encodeToString(in.getBytes("UTF-8"))).append(" ").append(res).append("\n");
  }
  Files.writeString(Path.of("/tmp/kdump/diff.txt"), out.toString());
}}
