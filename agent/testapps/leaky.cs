// A service whose memory grows, or does not, step by step, for `clrprof
// leaks` (crates/cli/tests/leaks.rs). Several threads work at once in every
// mode; a test sends "step" on standard input, waits for the JSON answer,
// takes a heap dump, and so on; "exit" ends the program.
//
// Mode "leak" (argument 1):
//   - Orders.All, a static List<Order>, gains ORDERS orders per step and
//     never loses one (each Order holds a string and a byte[]);
//   - Bus.Instance (a long-lived publisher) gains LISTENERS subscribers per
//     step on its Changed event, never unsubscribed;
//   - and the noise of mode "quiet" beside them.
// Mode "quiet":
//   - a cache (Dictionary<int, CacheEntry>) that fills to CACHE entries in
//     the first two steps and then replaces entries in place;
//   - garbage churn: four threads allocate and drop Temp objects and
//     arrays of several sizes until exit;
//   - a one-time warm-up: WARM Warm objects made before the first step.
// Each answer gives the program's own counts of what it holds.
using System;
using System.Collections.Generic;
using System.Threading;

namespace Leaky
{
    class Order
    {
        public int Id;
        public string Customer;
        public byte[] Payload;
        public Order(int id) { Id = id; Customer = "customer-" + id; Payload = new byte[64 + id % 7 * 16]; }
    }

    static class Orders
    {
        public static List<Order> All = new List<Order>();
    }

    class Bus
    {
        public static Bus Instance = new Bus();
        public event EventHandler Changed;
        public int Subscribers() { return Changed == null ? 0 : Changed.GetInvocationList().Length; }
    }

    class Listener
    {
        public int Id;
        public long Seen;
        public Listener(int id) { Id = id; }
        public void OnChanged(object sender, EventArgs e) { Seen++; }
    }

    class CacheEntry { public int Key; public string Value; public CacheEntry(int k) { Key = k; Value = "v" + k; } }
    class Temp { public long A, B; public object Next; }
    class Warm { public int X; public byte[] Table = new byte[32]; }

    static class Program
    {
        const int ORDERS = 3000;
        const int LISTENERS = 400;
        const int CACHE = 5000;
        const int WARM = 20000;

        static Dictionary<int, CacheEntry> Cache = new Dictionary<int, CacheEntry>();
        static Warm[] WarmUp;
        static volatile bool Stop;
        static long Churned;

        static void Churn(object seed)
        {
            var rng = new Random((int)seed);
            object keep = null;
            long n = 0;
            while (!Stop)
            {
                switch (rng.Next(4))
                {
                    case 0: keep = new Temp { A = n, Next = keep is Temp ? null : keep }; break;
                    case 1: keep = new byte[rng.Next(16, 4096)]; break;
                    case 2: keep = new string('x', rng.Next(1, 64)); break;
                    default: keep = new long[rng.Next(1, 512)]; break;
                }
                n++;
                if (n % 4096 == 0) Thread.Sleep(1);
            }
            Interlocked.Add(ref Churned, n);
            GC.KeepAlive(keep);
        }

        static int Main(string[] args)
        {
            bool leak = args.Length > 0 && args[0] == "leak";
            WarmUp = new Warm[WARM];
            for (int i = 0; i < WARM; i++) WarmUp[i] = new Warm { X = i };
            var threads = new List<Thread>();
            for (int t = 0; t < 4; t++)
            {
                var th = new Thread(Churn) { IsBackground = true };
                th.Start(t + 1);
                threads.Add(th);
            }
            Console.WriteLine("{\"ready\":true,\"pid\":" + System.Diagnostics.Process.GetCurrentProcess().Id + "}");
            int step = 0;
            string line;
            while ((line = Console.ReadLine()) != null)
            {
                line = line.Trim();
                if (line == "exit") break;
                if (line != "step") continue;
                step++;
                // The cache: half in step 1, full in step 2, then replaced in place.
                int fill = step == 1 ? CACHE / 2 : CACHE;
                for (int k = 0; k < fill; k++) Cache[k] = new CacheEntry(k);
                if (leak)
                {
                    // Two threads add orders at once, under the list's lock.
                    var adders = new Thread[2];
                    for (int a = 0; a < 2; a++)
                    {
                        int first = (step - 1) * ORDERS + a * (ORDERS / 2);
                        adders[a] = new Thread(() =>
                        {
                            for (int i = 0; i < ORDERS / 2; i++)
                            {
                                var o = new Order(first + i);
                                lock (Orders.All) Orders.All.Add(o);
                            }
                        });
                        adders[a].Start();
                    }
                    foreach (var a in adders) a.Join();
                    for (int i = 0; i < LISTENERS; i++)
                    {
                        var l = new Listener((step - 1) * LISTENERS + i);
                        Bus.Instance.Changed += l.OnChanged;
                    }
                }
                Console.WriteLine("{\"step\":" + step + ",\"orders\":" + Orders.All.Count + ",\"listeners\":" +
                    Bus.Instance.Subscribers() + ",\"cache\":" + Cache.Count + ",\"warm\":" + WarmUp.Length + "}");
            }
            Stop = true;
            foreach (var th in threads) th.Join();
            Console.WriteLine("{\"done\":true,\"churned\":" + Churned + "}");
            return 0;
        }
    }
}
