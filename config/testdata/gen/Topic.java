import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.storage.internals.log.LogConfig;
import org.apache.kafka.server.config.*;
import java.util.*;
public class Topic {
  public static void main(String[] a) throws Exception {
    Map<String, ConfigDef.ConfigKey> m = LogConfig.configKeys();
    List<String> names = new ArrayList<>(m.keySet()); Collections.sort(names);
    Set<String> nonInternal = new HashSet<>(LogConfig.nonInternalConfigNames());
    for (String n : names) {
      ConfigDef.ConfigKey k = m.get(n);
      Object def = k.defaultValue;
      String ds = def == ConfigDef.NO_DEFAULT_VALUE ? "<NONE>" : (def == null ? "<null>" : (def instanceof List ? String.join(",", ((List<?>)def).stream().map(Object::toString).toList()) : def.toString()));
      List<ConfigSynonym> syn = ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS.get(n);
      String ss = syn == null ? "" : String.join(",", syn.stream().map(s -> s.name()).toList());
      System.out.println(n + "\t" + k.type + "\t" + ds + "\t" + k.importance + "\t" + (k.validator == null ? "" : k.validator.toString()) + "\t" + ss + "\t" + (nonInternal.contains(n)?"":"INTERNAL"));
    }
  }
}
