import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.tukaani.xz.XZInputStream;

/** Dumps an NLP4J Brown-cluster lexicon (xz-compressed Java-serialized Map<String,Set<String>>).
 *  Usage: java -cp xz-1.5.jar:. DumpBrown in.xz out-prefix
 *  Writes out-prefix.tsv      : word \t longest bitstring in the set
 *         out-prefix.sets.tsv : word \t all bitstrings in the set, sorted by length, comma-separated
 *  and prints statistics to stdout. */
public class DumpBrown {
  public static void main(String[] a) throws Exception {
    Object o;
    try (ObjectInputStream in = new ObjectInputStream(new BufferedInputStream(new XZInputStream(new BufferedInputStream(new FileInputStream(a[0])))))) {
      o = in.readObject();
    }
    System.out.println("top-level class: " + o.getClass().getName());
    @SuppressWarnings("unchecked") Map<Object,Object> m = (Map<Object,Object>) o;
    System.out.println("entries: " + m.size());
    TreeMap<String,List<String>> sorted = new TreeMap<>();
    Map<String,Integer> valClasses = new TreeMap<>(), elemClasses = new TreeMap<>();
    Map<Integer,Integer> setSizeHist = new TreeMap<>(), maxLenHist = new TreeMap<>(), allLenHist = new TreeMap<>();
    int notPrefixChain = 0, nonBinary = 0, badWord = 0, empty = 0;
    Set<String> distinctMax = new HashSet<>();
    for (Map.Entry<Object,Object> e : m.entrySet()) {
      String w = (String) e.getKey();
      if (w.indexOf('\t') >= 0 || w.indexOf('\n') >= 0 || w.indexOf('\r') >= 0 || w.isEmpty()) badWord++;
      Object v = e.getValue();
      valClasses.merge(v.getClass().getName(), 1, Integer::sum);
      List<String> bits = new ArrayList<>();
      for (Object x : (Collection<?>) v) { elemClasses.merge(x.getClass().getName(), 1, Integer::sum); bits.add((String) x); }
      bits.sort(Comparator.comparingInt(String::length).thenComparing(Comparator.naturalOrder()));
      setSizeHist.merge(bits.size(), 1, Integer::sum);
      if (bits.isEmpty()) { empty++; sorted.put(w, bits); continue; }
      String max = bits.get(bits.size()-1);
      distinctMax.add(max);
      maxLenHist.merge(max.length(), 1, Integer::sum);
      for (String b : bits) { allLenHist.merge(b.length(), 1, Integer::sum); if (!b.matches("[01]+")) nonBinary++; if (!max.startsWith(b)) notPrefixChain++; }
      for (int i = 1; i < bits.size(); i++) if (bits.get(i).length() == bits.get(i-1).length()) notPrefixChain++;
      sorted.put(w, bits);
    }
    System.out.println("value classes: " + valClasses);
    System.out.println("element classes: " + elemClasses);
    System.out.println("set-size histogram: " + setSizeHist);
    System.out.println("longest-bitstring length histogram: " + maxLenHist);
    System.out.println("all-bitstring length histogram: " + allLenHist);
    System.out.println("distinct longest bitstrings (clusters): " + distinctMax.size());
    System.out.println("elements not a prefix of the longest (or duplicate lengths): " + notPrefixChain);
    System.out.println("non-binary elements: " + nonBinary + "; empty sets: " + empty + "; words with tab/newline/empty: " + badWord);
    try (PrintWriter p1 = new PrintWriter(new BufferedWriter(new OutputStreamWriter(new FileOutputStream(a[1] + ".tsv"), StandardCharsets.UTF_8)));
         PrintWriter p2 = new PrintWriter(new BufferedWriter(new OutputStreamWriter(new FileOutputStream(a[1] + ".sets.tsv"), StandardCharsets.UTF_8)))) {
      for (Map.Entry<String,List<String>> e : sorted.entrySet()) {
        List<String> b = e.getValue();
        p1.print(e.getKey()); p1.print('\t'); p1.print(b.isEmpty() ? "" : b.get(b.size()-1)); p1.print('\n');
        p2.print(e.getKey()); p2.print('\t'); p2.print(String.join(",", b)); p2.print('\n');
      }
    }
  }
}
