# gen.py turns the ConfigDef dumps of Dump.java (broker.tsv) and Topic.java (topic.tsv)
# into ../../keys_table.go. See README.md.
import re, sys
def gostr(s): return '"' + s.replace('\\','\\\\').replace('"','\\"') + '"'
TYPES = {"STRING":"TypeString","INT":"TypeInt","SHORT":"TypeShort","LONG":"TypeLong","DOUBLE":"TypeDouble","BOOLEAN":"TypeBoolean","LIST":"TypeList","PASSWORD":"TypePassword","CLASS":"TypeClass"}
IMP = {"HIGH":"High","MEDIUM":"Medium","LOW":"Low"}
nonempty = set("advertised.listeners controller.listener.names group.consumer.assignors group.coordinator.rebalance.protocols group.share.assignors group.streams.assignors listeners log.dir log.dirs process.roles".split())
nodup = set("advertised.listeners cleanup.policy config.providers controller.listener.names cordoned.log.dirs early.start.listeners group.consumer.assignors group.coordinator.rebalance.protocols group.share.assignors group.streams.assignors group.streams.rack.aware.assignment.tags kafka.metrics.reporters listeners log.cleanup.policy log.dir log.dirs metric.reporters process.roles sasl.enabled.mechanisms sasl.kerberos.principal.to.local.rules sasl.oauthbearer.expected.audience ssl.cipher.suites ssl.enabled.protocols".split())
topic_mode = [False]
def validator(name, typ, v):
    vs = []
    m = re.fullmatch(r'\[(-?[0-9.E]+),\.\.\.\]', v)
    if m: vs.append('AtLeast(%s)' % m.group(1))
    elif re.fullmatch(r'\[(-?[0-9.E]+),\.\.\.,(-?[0-9.E]+)\]', v):
        m = re.fullmatch(r'\[(-?[0-9.E]+),\.\.\.,(-?[0-9.E]+)\]', v); vs.append('Between(%s, %s)' % (m.group(1), m.group(2)))
    elif v == '[1,...,9] or -1': vs.append('BetweenOr(1, 9, -1)')
    elif v.startswith('(case insensitive) ['):
        items = v[len('(case insensitive) ['):-1].split(', ')
        vs.append('OneOfIgnoreCase(%s)' % ', '.join(gostr(i) for i in items))
    elif v == '[partitionId]:[brokerId],[partitionId]:[brokerId],...': vs.append('ThrottledReplicas()')
    elif v.startswith('['):
        items = v[1:-1].split(', ')
        vs.append('OneOf(%s)' % ', '.join(gostr(i) for i in items))
    elif v == 'non-empty string': vs.append('NonEmptyString()')
    elif v == 'non-empty list':
        vs.append('QuorumVoters()' if name == 'controller.quorum.voters' else 'BootstrapServers()')
    elif v in ('', 'non-null string'): pass
    else: sys.exit('unknown validator ' + v)
    if name in nonempty: vs.insert(0, 'NonEmptyList()')
    if name in nodup and not topic_mode[0]: vs.insert(0, 'NoDuplicates()')  # LogConfig.validate allows duplicates
    if not vs: return ''
    if len(vs) == 1: return vs[0]
    return 'All(%s)' % ', '.join(vs)
def entry(f, topic=False):
    name, typ, d, imp, v = f[0], f[1], f[2], f[3], f[4]
    parts = ['Name: ' + gostr(name), 'Type: ' + TYPES[typ]]
    if d == '<NONE>': parts.append('Required: true')
    elif d != '<null>':
        parts.append('Default: ' + gostr(d)); parts.append('HasDefault: true')
    parts.append('Importance: ' + IMP[imp])
    val = validator(name, typ, v)
    if val: parts.append('Validator: ' + val)
    if topic:
        syn = f[5]
        if syn: parts.append('Synonyms: []Synonym{%s}' % ', '.join(synonym(s) for s in syn.split(',')))
        if len(f) > 6 and f[6] == 'INTERNAL': parts.append('Internal: true')
    return '\t{' + ', '.join(parts) + '},'
def synonym(s):
    if s.endswith('.hours'): return '{Name: %s, Unit: UnitHours}' % gostr(s)
    if s.endswith('.minutes'): return '{Name: %s, Unit: UnitMinutes}' % gostr(s)
    return '{Name: %s}' % gostr(s)
out = ['// Code generated from Apache Kafka 4.4.0\'s broker and topic ConfigDefs (names, types,',
 '// defaults, importance, validators). DO NOT EDIT. Which keys kgo-broker acts on is in acted.go.', '',
 'package config', '',
 '// brokerKeys is every broker config key Apache Kafka 4.4.0 defines (AbstractKafkaConfig.CONFIG_DEF).',
 'var brokerKeys = []Key{']
for line in open('broker.tsv'):
    out.append(entry(line.rstrip('\n').split('\t')))
out += ['}', '', '// topicKeys is every topic-level config key (LogConfig) with its broker synonyms', '// (ServerTopicConfigSynonyms), in priority order.', 'var topicKeys = []TopicKey{']
topic_mode[0] = True
for line in open('topic.tsv'):
    f = line.rstrip('\n').split('\t')
    out.append(entry(f, topic=True).replace('\t{', '\t{Key: Key{', 1).replace(', Synonyms:', '}, Synonyms:', 1) if f[5] else entry(f, topic=True).replace('\t{','\t{Key: Key{',1).replace('},', '}},'))
out.append('}')
open('../../keys_table.go','w').write('\n'.join(out) + '\n')
