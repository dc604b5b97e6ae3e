// A user's own program for crates/cli/tests/own_program.rs: the test
// compiles it with `mcs` and records it as the guide says (docs/src/
// task-record.md). It allocates types of its own, keeps a tenth of them,
// and prints how many it made as one JSON line, for the test to compare
// with the log.
using System;
using System.Collections.Generic;

class ShopOrder
{
    public int Id;
    public List<ShopLine> Lines = new List<ShopLine>();
}

class ShopLine
{
    public string Sku;
    public int Quantity;
}

struct ShopPrice
{
    public long Cents;
}

static class Shop
{
    static int Main(string[] args)
    {
        int orders = args.Length > 0 ? int.Parse(args[0]) : 2000;
        var kept = new List<ShopOrder>();
        long cents = 0;
        for (int i = 0; i < orders; i++)
        {
            var order = new ShopOrder { Id = i };
            for (int j = 0; j < 3; j++)
            {
                order.Lines.Add(new ShopLine { Sku = "SKU-" + (i * 3 + j), Quantity = j + 1 });
            }
            var prices = new ShopPrice[4];
            for (int j = 0; j < prices.Length; j++)
            {
                prices[j].Cents = i + j;
                cents += prices[j].Cents;
            }
            if (i % 10 == 0)
            {
                kept.Add(order);
            }
        }
        Console.WriteLine("{\"ShopOrder\":" + orders + ",\"ShopLine\":" + (3 * orders) + ",\"ShopPrice []\":" + orders
            + ",\"kept\":" + kept.Count + ",\"cents\":" + cents + "}");
        return 0;
    }
}
