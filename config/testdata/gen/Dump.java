import org.apache.kafka.common.config.ConfigDef;
import java.util.*;
public class Dump {
  public static void main(String[] a) throws Exception {
    ConfigDef d = (ConfigDef) Class.forName(a[0]).getField(a[1]).get(null);
    List<String> names = new ArrayList<>(d.configKeys().keySet());
    Collections.sort(names);
    for (String n : names) {
      ConfigDef.ConfigKey k = d.configKeys().get(n);
      Object def = k.defaultValue;
      String ds = def == ConfigDef.NO_DEFAULT_VALUE ? "<NONE>" : (def == null ? "<null>" : (def instanceof List ? String.join(",", ((List<?>)def).stream().map(Object::toString).toList()) : (def instanceof Class ? ((Class<?>)def).getName() : def.toString())));
      System.out.println(n + "\t" + k.type + "\t" + ds + "\t" + k.importance + "\t" + (k.validator == null ? "" : k.validator.toString().replace("\n"," ")) + "\t" + (d.configKeys().get(n).dependents));
    }
  }
}
